package fasthttpio_test

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/median-go/median/internal/adapt/fasthttpio"
)

// TestHeaderNamesAsSent: with header names kept as sent (fiber's
// DisableHeaderNormalizing, fasthttp's DisableHeaderNamesNormalizing),
// the median-signature header is read in any case and its lines joined in
// the order received, and Median-Check too; with names normalized, as
// before.
func TestHeaderNamesAsSent(t *testing.T) {
	raw := "POST /median HTTP/1.1\r\nHost: example.test\r\nmedian-signature: t=1\r\nMEDIAN-SIGNATURE: v1=ab\r\nmedian-check: mark\r\nContent-Length: 2\r\n\r\n{}"
	for _, keep := range []bool{true, false} {
		var req fasthttp.Request
		if keep {
			req.Header.DisableNormalizing()
		}
		require.NoError(t, req.Read(bufio.NewReader(strings.NewReader(raw))))
		r, stream := fasthttpio.Request(&req, "POST")
		assert.Nil(t, stream)
		assert.Equal(t, "t=1,v1=ab", r.Signature, "names kept as sent: %v", keep)
		assert.Equal(t, "mark", r.Check, "names kept as sent: %v", keep)
		assert.Equal(t, "{}", string(r.BodyBytes))
	}
}
