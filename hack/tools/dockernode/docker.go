package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// dockerAPI is the Engine API version spoken: Debian's dockerd 20.10 serves 1.41.
const dockerAPI = "/v1.41"

// dockerClient is a minimal Docker Engine API client over a unix socket.
type dockerClient struct {
	sock string
	http *http.Client
}

func newDocker(sock string) *dockerClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableCompression: true,
	}
	return &dockerClient{sock: sock, http: &http.Client{Transport: tr}}
}

// call sends a request (body as JSON unless nil) and returns the answer
// body, or an error naming the request if it is not 2xx.
func (d *dockerClient) call(ctx context.Context, method, path string, body any) (io.ReadCloser, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://docker"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker %s %s on %s: %w", method, path, d.sock, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var em struct{ Message string }
		if json.Unmarshal(msg, &em) == nil && em.Message != "" {
			msg = []byte(em.Message)
		}
		return nil, fmt.Errorf("docker %s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return resp.Body, nil
}

// do calls the versioned API and decodes a JSON answer into out unless nil.
func (d *dockerClient) do(ctx context.Context, method, path string, body, out any) error {
	rc, err := d.call(ctx, method, dockerAPI+path, body)
	if err != nil {
		return err
	}
	defer rc.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, rc)
		return err
	}
	return json.NewDecoder(rc).Decode(out)
}

func (d *dockerClient) ping(ctx context.Context) error {
	rc, err := d.call(ctx, "GET", "/_ping", nil)
	if err != nil {
		return fmt.Errorf("dockerd does not answer (hack/cluster.sh up): %w", err)
	}
	return rc.Close()
}

// logs returns the last lines of a (non-TTY) container's stdout and stderr,
// demultiplexed from the 8-byte frame headers.
func (d *dockerClient) logs(ctx context.Context, id string, tail int) (string, error) {
	rc, err := d.call(ctx, "GET", dockerAPI+"/containers/"+id+"/logs?stdout=1&stderr=1&tail="+strconv.Itoa(tail), nil)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var out bytes.Buffer
	hdr := make([]byte, 8)
	for {
		if _, err := io.ReadFull(rc, hdr); err == io.EOF {
			return out.String(), nil
		} else if err != nil {
			return out.String(), err
		}
		if _, err := io.CopyN(&out, rc, int64(binary.BigEndian.Uint32(hdr[4:]))); err != nil {
			return out.String(), err
		}
	}
}
