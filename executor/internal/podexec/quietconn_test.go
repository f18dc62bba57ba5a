package podexec

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// TestQuietClosedConn: what client-go's remotecommand reports from its
// copying goroutines (runtime.HandleErrorWithLogger with the context's
// logger) on a connection closed as the session ended is a V(4) message,
// not an error; any other error is still logged as one.
func TestQuietClosedConn(t *testing.T) {
	closed := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("use of closed network connection")}
	for _, tt := range []struct {
		name      string
		err       error
		wantError bool
	}{
		{name: "net.ErrClosed", err: &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}},
		{name: "closed connection, flattened to text", err: closed},
		{name: "another error is still an error", err: errors.New("stream reset by peer"), wantError: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var lines []string
			base := funcr.New(func(prefix, args string) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, prefix+" "+args)
			}, funcr.Options{Verbosity: 4})
			ctx := quietClosedConn(klog.NewContext(context.Background(), base))
			utilruntime.HandleErrorWithLogger(klog.FromContext(ctx), tt.err, "Copying stdout failed")
			mu.Lock()
			defer mu.Unlock()
			all := strings.Join(lines, "\n")
			isError := strings.Contains(all, `"error"=`) || strings.Contains(all, `"error":`)
			if isError != tt.wantError {
				t.Errorf("logged an error = %v, want %v; log:\n%s", isError, tt.wantError, all)
			}
			if !strings.Contains(all, "Copying stdout failed") {
				t.Errorf("the message is lost; log:\n%s", all)
			}
			if !tt.wantError && !strings.Contains(all, `"level"=4`) {
				t.Errorf("want a V(4) message; log:\n%s", all)
			}
		})
	}
}
