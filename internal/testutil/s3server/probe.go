package s3server

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Client returns a minio-go client for s.
func (s *Server) Client() (*minio.Client, error) {
	return minio.New(trimScheme(s.Endpoint), &minio.Options{
		Creds:  credentials.NewStaticV4(AccessKey, SecretKey, ""),
		Region: Region,
	})
}

// probe writes, reads back and removes an object in the bucket.
func probe(ctx context.Context, s *Server) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	ok, err := c.BucketExists(ctx, s.Bucket)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: Region}); err != nil {
			return err
		}
	}
	const key, body = ".ferry-probe", "ready"
	if _, err := c.PutObject(ctx, s.Bucket, key, bytes.NewReader([]byte(body)), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		return err
	}
	o, err := c.GetObject(ctx, s.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	b, err := io.ReadAll(o)
	o.Close()
	if err != nil {
		return err
	}
	if string(b) != body {
		return fmt.Errorf("probe object read back as %q", b)
	}
	return c.RemoveObject(ctx, s.Bucket, key, minio.RemoveObjectOptions{})
}
