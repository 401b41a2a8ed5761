// manyfiles-s3server: the S3 server behind `--fs s3` (manyfiles' object-store targets).
//
// gofakes3 (github.com/johannesboyne/gofakes3, MIT) serving one bucket whose objects sit
// in a bbolt database file (gofakes3's s3bolt back end) in a directory we are given: a
// managed file system of manyfiles', as a share's export is.
//
//	manyfiles-s3server -listen 127.0.0.1:PORT -dir DIR -bucket NAME
//
// The access key comes from the environment (MANYFILES_S3_ACCESS_KEY), never argv.
// gofakes3 authenticates nothing: every request must name that access key in its
// Authorization header (SigV4 `Credential=KEY/…` or V2 `AWS KEY:…`), else 403. The
// signature itself is not verified: what keeps other users out is the stack's own
// network namespace (loopback only) this server runs in.
//
// s3bolt lets object bytes be read after its bbolt transaction (a write that grows the
// file meanwhile killed the server with a SIGSEGV): every call goes through
// lockedBackend (backend.go), which copies them out before any write may run.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
)

// versionString is what -version prints, and then " source HASH" when the build was
// given the hash of the source it was built from (.ci/run: -ldflags "-X
// main.sourceHash=…"; it rebuilds the installed binary when that is not the source's).
const versionString = "manyfiles-s3server 2 (gofakes3 v1.2.0, s3bolt back end, reads copied under a lock)"

var sourceHash string

// withAccessKey refuses a request whose Authorization header does not name key.
func withAccessKey(key string, next http.Handler) http.Handler {
	v4, v2 := "Credential="+key+"/", "AWS "+key+":"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		if !strings.Contains(a, v4) && !strings.HasPrefix(a, v2) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// newHandler opens (or creates) the bucket's database file in dir, creates bucket in it
// if missing, and returns what the server serves: the access-key check in front of
// gofakes3 over the s3bolt back end. The test (main_test.go) serves the same.
func newHandler(dir, bucket, key string) (http.Handler, error) {
	bolt, err := s3bolt.NewFile(filepath.Join(dir, "objects.bolt"))
	if err != nil {
		return nil, err
	}
	// s3bolt's objects must not be read once its transaction is over: see lockedBackend.
	backend := &lockedBackend{b: bolt}
	if ok, err := backend.BucketExists(bucket); err != nil {
		return nil, err
	} else if !ok {
		if err := backend.CreateBucket(bucket); err != nil {
			return nil, err
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithoutVersioning())
	return withAccessKey(key, faker.Server()), nil
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	dir := flag.String("dir", "", "directory the bucket's database file goes in (required)")
	bucket := flag.String("bucket", "manyfiles", "the bucket to create if missing")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		if sourceHash != "" {
			fmt.Println(versionString + " source " + sourceHash)
		} else {
			fmt.Println(versionString)
		}
		return nil
	}
	key := os.Getenv("MANYFILES_S3_ACCESS_KEY")
	if key == "" {
		return fmt.Errorf("MANYFILES_S3_ACCESS_KEY is not set")
	}
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	handler, err := newHandler(*dir, *bucket, key)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Printf("serving bucket %s on http://%s", *bucket, ln.Addr())
	return http.Serve(ln, handler)
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}
