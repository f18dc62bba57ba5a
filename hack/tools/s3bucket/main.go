// Command s3bucket creates an S3 bucket if it does not exist yet; hack/demo.sh
// uses it against the testbed's versitygw.
//
//	s3bucket -endpoint 10.88.0.1:7070 -access-key K -secret-key S -bucket NAME
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	endpoint := flag.String("endpoint", "", "host:port of the S3 server (plain HTTP)")
	access := flag.String("access-key", "", "access key ID")
	secret := flag.String("secret-key", "", "secret access key")
	region := flag.String("region", "us-east-1", "region")
	bucket := flag.String("bucket", "", "bucket to create")
	flag.Parse()
	if err := run(*endpoint, *access, *secret, *region, *bucket); err != nil {
		fmt.Fprintln(os.Stderr, "s3bucket:", err)
		os.Exit(1)
	}
}

func run(endpoint, access, secret, region, bucket string) error {
	if endpoint == "" || bucket == "" {
		return fmt.Errorf("-endpoint and -bucket are required")
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: region})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return fmt.Errorf("check bucket %s at %s: %w", bucket, endpoint, err)
	}
	if ok {
		return nil
	}
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		return fmt.Errorf("make bucket %s at %s: %w", bucket, endpoint, err)
	}
	return nil
}
