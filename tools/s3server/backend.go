package main

import (
	"bytes"
	"io"
	"sync"

	"github.com/johannesboyne/gofakes3"
)

// lockedBackend keeps gofakes3 1.2's s3bolt back end from handing out memory it no
// longer owns.
//
// s3bolt's GetObject (and HeadObject, and CopyObject, which is GetObject then PutObject)
// decodes the stored object with mgo's bson inside a bbolt read transaction, and bson
// sets a []byte field to a slice of its input: the object's Contents and Hash point
// into bbolt's memory map. They are read after the transaction has ended — the body
// while gofakes3 writes it to the client, the hash for the ETag, CopyObject's hash after
// its own PutObject — and any write meanwhile may grow the file, so that bbolt unmaps
// the old map and maps it anew (the reader then faults: SIGSEGV kills the server), or
// reuse the pages of an object overwritten or deleted (the reader sends other bytes).
//
// So no write runs while a reader holds such bytes: writes (PutObject, DeleteObject,
// DeleteMulti, the bucket calls) take mu for writing; GetObject and HeadObject take it
// for reading and copy the bytes (Contents, Hash) into memory of their own before they
// let go. The listings and BucketExists copy all they return (keys, the formatted ETag,
// times) inside their transaction and need no lock.
//
// Cost: a GET holds one full copy of the object (or of its range) in memory until its
// answer is sent, where s3bolt held none; a PUT whose body is not already in memory
// (a plain PUT: the request body) is read into memory before the write lock is taken, so
// that a slow client holds no one else up — one more copy of the body beside the three
// s3bolt makes anyway (its own ReadAll, the bson document, bbolt's pages). A multipart
// upload's completion and a server-side copy hand over bytes already in memory and are
// not copied again here. The objects manyfiles writes are small; a multipart object of
// a few hundred MiB costs the same few hundred MiB once more while its copy is read.
type lockedBackend struct {
	mu sync.RWMutex
	b  gofakes3.Backend
}

var _ gofakes3.Backend = (*lockedBackend)(nil)

func (l *lockedBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	return l.b.ListBuckets()
}

func (l *lockedBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	return l.b.ListBucket(name, prefix, page)
}

func (l *lockedBackend) BucketExists(name string) (bool, error) {
	return l.b.BucketExists(name)
}

func (l *lockedBackend) CreateBucket(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.CreateBucket(name)
}

func (l *lockedBackend) DeleteBucket(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.DeleteBucket(name)
}

func (l *lockedBackend) ForceDeleteBucket(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.ForceDeleteBucket(name)
}

// owned copies what obj's Contents and Hash point at; the caller holds mu for reading.
func owned(obj *gofakes3.Object) (*gofakes3.Object, error) {
	obj.Hash = bytes.Clone(obj.Hash)
	if obj.Contents == nil {
		return obj, nil
	}
	defer obj.Contents.Close()
	n := obj.Size
	if obj.Range != nil {
		n = obj.Range.Length
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(obj.Contents, buf); err != nil {
		return nil, err
	}
	obj.Contents = io.NopCloser(bytes.NewReader(buf))
	return obj, nil
}

func (l *lockedBackend) GetObject(bucketName, objectName string, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	obj, err := l.b.GetObject(bucketName, objectName, rangeRequest)
	if err != nil {
		return nil, err
	}
	return owned(obj)
}

func (l *lockedBackend) HeadObject(bucketName, objectName string) (*gofakes3.Object, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	obj, err := l.b.HeadObject(bucketName, objectName)
	if err != nil {
		return nil, err
	}
	obj.Hash = bytes.Clone(obj.Hash) // Contents is a no-op reader
	return obj, nil
}

func (l *lockedBackend) PutObject(bucketName, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	if _, inMemory := input.(*bytes.Reader); !inMemory {
		// Read the body (and check its Content-MD5, which the reader does) before
		// taking the lock, as s3bolt reads it before its write transaction.
		body, err := gofakes3.ReadAll(input, size)
		if err != nil {
			return gofakes3.PutObjectResult{}, err
		}
		input = bytes.NewReader(body)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.PutObject(bucketName, key, meta, input, size, conditions)
}

func (l *lockedBackend) DeleteObject(bucketName, objectName string) (gofakes3.ObjectDeleteResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.DeleteObject(bucketName, objectName)
}

func (l *lockedBackend) DeleteMulti(bucketName string, objects ...string) (gofakes3.MultiDeleteResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.DeleteMulti(bucketName, objects...)
}

// CopyObject is gofakes3's own (GetObject, then PutObject of its Contents, the ETag
// from its Hash), as s3bolt's is, but through l: the source is copied under the read
// lock, the destination written under the write lock.
func (l *lockedBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(l, srcBucket, srcKey, dstBucket, dstKey, meta)
}
