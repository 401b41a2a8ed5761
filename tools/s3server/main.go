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

func run() error {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	dir := flag.String("dir", "", "directory the bucket's database file goes in (required)")
	bucket := flag.String("bucket", "manyfiles", "the bucket to create if missing")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("manyfiles-s3server 1 (gofakes3 v1.2.0, s3bolt back end)")
		return nil
	}
	key := os.Getenv("MANYFILES_S3_ACCESS_KEY")
	if key == "" {
		return fmt.Errorf("MANYFILES_S3_ACCESS_KEY is not set")
	}
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	backend, err := s3bolt.NewFile(filepath.Join(*dir, "objects.bolt"))
	if err != nil {
		return err
	}
	if ok, err := backend.BucketExists(*bucket); err != nil {
		return err
	} else if !ok {
		if err := backend.CreateBucket(*bucket); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	faker := gofakes3.New(backend, gofakes3.WithoutVersioning())
	log.Printf("serving bucket %s on http://%s", *bucket, ln.Addr())
	return http.Serve(ln, withAccessKey(key, faker.Server()))
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}
