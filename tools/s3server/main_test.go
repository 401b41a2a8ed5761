package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testBucket = "manyfiles"
	testKey    = "TESTKEY"
)

// body is the content of the object named name: size pseudo-random bytes seeded by the
// name, so a reader knows what any object must hold.
func body(name string, size int) []byte {
	h := fnv.New64a()
	h.Write([]byte(name))
	var seed [32]byte
	s := h.Sum64()
	for i := range seed {
		seed[i] = byte(s >> (8 * (i % 8)))
		seed[i] ^= byte(i)
	}
	b := make([]byte, size)
	rand.NewChaCha8(seed).Read(b)
	return b
}

func etag(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

type client struct {
	base string
	http *http.Client
}

// do sends one request (with an Authorization header withAccessKey accepts) and reads
// the whole answer.
func (c *client) do(method, key string, payload []byte, header map[string]string) (*http.Response, []byte, error) {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequest(method, c.base+"/"+testBucket+"/"+key, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "AWS "+testKey+":not-checked")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, key, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil, fmt.Errorf("%s %s: reading the answer: %w", method, key, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return resp, b, fmt.Errorf("%s %s: %s: %.300s", method, key, resp.Status, b)
	}
	return resp, b, nil
}

func (c *client) put(key string, b []byte) error {
	resp, _, err := c.do("PUT", key, b, nil)
	if err != nil {
		return err
	}
	if got := resp.Header.Get("ETag"); got != etag(b) {
		return fmt.Errorf("PUT %s: ETag %s, want %s", key, got, etag(b))
	}
	return nil
}

// get checks that key holds want (bytes and ETag).
func (c *client) get(key string, want []byte) error {
	resp, b, err := c.do("GET", key, nil, nil)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, want) {
		return fmt.Errorf("GET %s: %d bytes, not the %d written (first difference at %d)", key, len(b), len(want), firstDiff(b, want))
	}
	if got := resp.Header.Get("ETag"); got != etag(want) {
		return fmt.Errorf("GET %s: ETag %s, want %s", key, got, etag(want))
	}
	return nil
}

// getRange checks that bytes [from, to] of key are want's.
func (c *client) getRange(key string, from, to int, want []byte) error {
	resp, b, err := c.do("GET", key, nil, map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", from, to)})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, want[from:to+1]) {
		return fmt.Errorf("GET %s bytes %d-%d: %s, %d bytes, not the %d written", key, from, to, resp.Status, len(b), to+1-from)
	}
	return nil
}

func (c *client) head(key string, want []byte) error {
	resp, _, err := c.do("HEAD", key, nil, nil)
	if err != nil {
		return err
	}
	if got := resp.Header.Get("ETag"); got != etag(want) {
		return fmt.Errorf("HEAD %s: ETag %s, want %s", key, got, etag(want))
	}
	if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(want)) {
		return fmt.Errorf("HEAD %s: Content-Length %s, want %d", key, got, len(want))
	}
	return nil
}

// copy makes dst a server-side copy of src (CopyObject), whose content is want.
func (c *client) copy(src, dst string, want []byte) error {
	_, b, err := c.do("PUT", dst, nil, map[string]string{"x-amz-copy-source": "/" + testBucket + "/" + src})
	if err != nil {
		return err
	}
	var result struct {
		ETag string `xml:"ETag"`
	}
	if err := xml.Unmarshal(b, &result); err != nil {
		return fmt.Errorf("copy %s to %s: %v in %.300s", src, dst, err, b)
	}
	if result.ETag != etag(want) {
		return fmt.Errorf("copy %s to %s: ETag %s, want %s", src, dst, result.ETag, etag(want))
	}
	return c.get(dst, want)
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Readers (GET, HEAD, CopyObject) while PUTs grow the bbolt file, which bbolt then maps
// again: gofakes3 1.2's s3bolt back end hands out object bytes (and the ETag's hash)
// that still point into the old map after its read transaction ended, so the server died
// of a SIGSEGV (40 server-side copies at once did it). Fixed counts: 8 writers × 16 PUTs
// of 256 KiB–1 MiB (~74 MiB; with the copies the file grows to ~270 MiB, and bbolt maps
// it anew at every doubling, 9 times past 1 MiB) and 40 readers (GET, ranged GET,
// HEAD, copy) until the writers are done; every answer's bytes and ETag are checked.
func TestReadersWhileWritesGrowTheDatabase(t *testing.T) {
	const (
		writers, putsEach = 8, 16
		readers, sources  = 40, 8
	)
	dir := t.TempDir()
	h, err := newHandler(dir, testBucket, testKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &client{srv.URL, &http.Client{
		Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256},
		Timeout:   60 * time.Second,
	}}

	// No key, no entry.
	if resp, err := http.Get(srv.URL + "/" + testBucket + "/x"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a request without the access key: %s, want 403", resp.Status)
	}

	src := make([][]byte, sources)
	for i := range src {
		name := fmt.Sprintf("src/%d", i)
		src[i] = body(name, 128<<10+i*48<<10)
		if err := c.put(name, src[i]); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu       sync.Mutex
		failures []string
		nfail    atomic.Int64
		gets     atomic.Int64
		heads    atomic.Int64
		copies   atomic.Int64
		putBytes atomic.Int64
	)
	fail := func(err error) {
		if nfail.Add(1) <= 10 {
			mu.Lock()
			failures = append(failures, err.Error())
			mu.Unlock()
		}
	}

	t0 := time.Now()
	done := make(chan struct{})
	var wg, rg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for j := range putsEach {
				name := fmt.Sprintf("grow/%d/%d", w, j)
				b := body(name, 256<<10+r.IntN(768<<10))
				if err := c.put(name, b); err != nil {
					fail(err)
				}
				putBytes.Add(int64(len(b)))
			}
		}()
	}
	for g := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for i := 0; ; i++ {
				select {
				case <-done:
					if i > 0 {
						return
					}
				default:
				}
				s := r.IntN(sources)
				name := fmt.Sprintf("src/%d", s)
				var err error
				switch r.IntN(4) {
				case 0:
					err = c.get(name, src[s])
					gets.Add(1)
				case 1:
					from := r.IntN(len(src[s]) / 2)
					err = c.getRange(name, from, from+(64<<10)-1, src[s])
					gets.Add(1)
				case 2:
					err = c.head(name, src[s])
					heads.Add(1)
				case 3:
					err = c.copy(name, fmt.Sprintf("copy/%d/%d", g, i), src[s])
					copies.Add(1)
				}
				if err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	elapsed := time.Since(t0)

	// What the writers wrote is there, whole.
	for w := range writers {
		for j := range putsEach {
			name := fmt.Sprintf("grow/%d/%d", w, j)
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range j {
				r.IntN(768 << 10)
			}
			if err := c.get(name, body(name, 256<<10+r.IntN(768<<10))); err != nil {
				fail(err)
			}
		}
	}

	var size int64
	if st, err := os.Stat(filepath.Join(dir, "objects.bolt")); err == nil {
		size = st.Size()
	}
	t.Logf("%d PUTs (%d MiB), %d GETs, %d HEADs, %d copies in %.1f s; database file %d MiB",
		writers*putsEach, putBytes.Load()>>20, gets.Load(), heads.Load(), copies.Load(), elapsed.Seconds(), size>>20)
	if n := nfail.Load(); n > 0 {
		t.Fatalf("%d requests failed; the first:\n%s", n, joinLines(failures))
	}
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
