package podexec

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"
	streamspdy "k8s.io/streaming/pkg/httpstream/spdy"
)

// frameSniffer is a server-side net.Conn that parses the SPDY frames the
// client sends once armed (after the HTTP upgrade request) and counts the
// pings among them, signalling the first on pinged.
type frameSniffer struct {
	net.Conn
	armed  *atomic.Bool
	pings  *atomic.Int64
	pinged chan struct{}
	once   *sync.Once
	buf    []byte
}

func (c *frameSniffer) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.armed.Load() {
		c.buf = append(c.buf, p[:n]...)
		for len(c.buf) >= 8 {
			// SPDY/3 frame: 8-byte header, its last 3 bytes the length; a
			// control frame has the top bit set and its type in bytes 2-3.
			length := int(binary.BigEndian.Uint32(c.buf[4:8]) & 0xffffff)
			if len(c.buf) < 8+length {
				break
			}
			if c.buf[0]&0x80 != 0 && binary.BigEndian.Uint16(c.buf[2:4]) == 6 {
				c.pings.Add(1)
				c.once.Do(func() { close(c.pinged) })
			}
			c.buf = c.buf[8+length:]
		}
	}
	return n, err
}

type sniffListener struct {
	net.Listener
	armed  *atomic.Bool
	pings  *atomic.Int64
	pinged chan struct{}
	once   *sync.Once
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &frameSniffer{Conn: c, armed: l.armed, pings: l.pings, pinged: l.pinged, once: l.once}, nil
}

// TestRemoteExecerPings: a SPDY session that carries stdout sends the
// server no pings (a ping that reaches containerd 1.6's streaming server as
// it closes a session cut the end off 20 concurrent copies, issue 13), and
// a session without stdout still pings at PingPeriod (keeping a quiet
// session open through proxies). The server runs the remote-command v4
// protocol: the stdout session streams data for 50 ping periods, the quiet
// one ends at the first ping it sees.
func TestRemoteExecerPings(t *testing.T) {
	const period = 10 * time.Millisecond
	for _, tc := range []struct {
		name      string
		stdout    bool
		wantPings bool
	}{
		{name: "stdout: no pings", stdout: true},
		{name: "no stdout: pings", wantPings: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			sl := &sniffListener{Listener: l, armed: &atomic.Bool{}, pings: &atomic.Int64{}, pinged: make(chan struct{}), once: &sync.Once{}}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
					t.Errorf("handshake: %v", err)
					return
				}
				streams := make(chan httpstream.Stream, 4)
				sl.armed.Store(true)
				conn := streamspdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
					streams <- s
					return nil
				})
				if conn == nil {
					t.Error("upgrade failed")
					return
				}
				defer conn.Close()
				byType := map[string]httpstream.Stream{}
				want := 2 // error and stderr
				if tc.stdout {
					want = 3
				}
				for len(byType) < want {
					s := <-streams
					byType[s.Headers().Get("streamType")] = s
				}
				if out := byType["stdout"]; out != nil {
					chunk := []byte(strings.Repeat("x", 1024))
					for end := time.Now().Add(50 * period); time.Now().Before(end); {
						if _, err := out.Write(chunk); err != nil {
							t.Errorf("write stdout: %v", err)
							return
						}
						time.Sleep(time.Millisecond)
					}
				} else {
					select {
					case <-sl.pinged:
					case <-time.After(10 * time.Second):
					}
				}
				for _, s := range byType {
					if s.Headers().Get("streamType") == "error" {
						_, _ = s.Write([]byte(`{"metadata":{},"status":"Success"}`))
					}
					s.Close()
				}
			}))
			srv.Listener = sl
			srv.Start()
			defer srv.Close()
			ex := &RemoteExecer{
				Config:     &rest.Config{Host: srv.URL},
				PingPeriod: period,
				URL: func(req ExecRequest) (*url.URL, error) {
					return url.Parse(srv.URL + "/exec/" + req.Container)
				},
			}
			var stdout io.Writer
			if tc.stdout {
				stdout = io.Discard
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := ex.Exec(ctx, "main", []string{"tar", "-cf", "-", "x"}, nil, stdout, io.Discard); err != nil {
				t.Fatalf("Exec = %v", err)
			}
			if spdy, ws := ex.Sessions(); spdy != 1 || ws != 0 {
				t.Fatalf("sessions: SPDY %d, WebSocket %d; want the one over SPDY", spdy, ws)
			}
			if got := sl.pings.Load(); (got > 0) != tc.wantPings {
				t.Errorf("the server saw %d pings in the session, want pings %v", got, tc.wantPings)
			}
		})
	}
}
