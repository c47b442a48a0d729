package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBindInputWholeFloats(t *testing.T) {
	var in struct {
		N int64   `json:"n"`
		M []int   `json:"m"`
		F float64 `json:"f"`
	}
	c := &Call{RawInput: json.RawMessage(`{"n":9007199254740993.0,"m":[1e2,3.0],"f":2.5}`)}
	require.NoError(t, c.BindInput(&in))
	require.Equal(t, int64(9007199254740993), in.N)
	require.Equal(t, []int{100, 3}, in.M)
	require.Equal(t, 2.5, in.F)
	c = &Call{RawInput: json.RawMessage(`{"n":2.5}`)}
	err := c.BindInput(&in)
	require.Error(t, err)
	require.Equal(t, CodeInvalidInput, errorCode(err))
	require.Contains(t, err.Error(), "n: expected integer")
}
