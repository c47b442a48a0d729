package errorleak

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestURLAndPathErrorsReachOnlyTheLog: a *url.Error whose URL holds a
// password (net/http strips it from its own; an app that builds one might
// not), around a real dial to a closed port, and a real *os.PathError,
// each plain and wrapped, leave the server only by its log.
func TestURLAndPathErrorsReachOnlyTheLog(t *testing.T) {
	const (
		user, pass = "svc_q7", "url-pass-K4w"
		host, port = "orders-q7.internal", "8443"
		dirName    = "leak-dir-q7"
	)
	dialPort := strconv.Itoa(ClosedPort(t))
	_, dialErr := net.DialTimeout("tcp", "127.0.0.1:"+dialPort, 5*time.Second)
	require.Error(t, dialErr)
	urlErr := &url.Error{Op: "Get", URL: "https://" + user + ":" + pass + "@" + host + ":" + port + "/v1/orders/A-1", Err: dialErr}

	path := filepath.Join(t.TempDir(), dirName, "orders.json")
	_, pathErr := os.Open(path)
	require.Error(t, pathErr)

	urlSecrets := []string{user, pass, host, port, "127.0.0.1", dialPort}
	pathSecrets := []string{path, dirName, filepath.Dir(path)}
	Check(t, []Leak{
		{"url_error", urlErr, urlSecrets},
		{"url_error_wrapped", fmt.Errorf("warehouse stock: %w", urlErr), urlSecrets},
		{"path_error", pathErr, pathSecrets},
		{"path_error_wrapped", fmt.Errorf("read the order export: %w", pathErr), pathSecrets},
	})
}
