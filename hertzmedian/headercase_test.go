package hertzmedian_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/hertzmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
)

// TestHeaderNamesAsSent: on a server that keeps header names as sent
// (server.WithDisableHeaderNamesNormalizing), the median-signature header
// is still read in any case: Median sends it in lower case, and a header
// split on commas may come in several spellings.
func TestHeaderNamesAsSent(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	c, _ := start(t, func(hz *server.Hertz) { hertzmedian.Mount(hz, "/median", h) }, server.WithDisableHeaderNamesNormalizing(true))
	for _, name := range []string{"median-signature", "MEDIAN-SIGNATURE", "Median-Signature"} {
		body := adaptertest.ToolCall(adaptertest.ToolEcho, "call_"+name, `{"text":"as sent"}`)
		req := httptest.NewRequest(http.MethodPost, "http://example.test/median", bytes.NewReader(body))
		req.Header[name] = []string{adaptertest.MustKey(adaptertest.Key).Sign(adaptertest.Now, body)} // sent as spelled
		res, err := c.Forward(req)
		require.NoError(t, err)
		got, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		assert.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", name, got)
		assert.JSONEq(t, `{"result":{"text":"as sent","visitor":"user_7"}}`, string(got), name)
	}
	assert.Equal(t, int64(3), runs.Echo.Load())
}
