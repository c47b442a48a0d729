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
	require.Equal(t, CodeInvalidInput, ErrorCode(err))
	require.Contains(t, err.Error(), "n: expected integer")
}

// TestBindInputReadsAsTheSchemaDoes: names match exactly (encoding/json
// bound "ORDERID" to OrderID), a name given twice is refused, and errors
// name the field by its path.
func TestBindInputReadsAsTheSchemaDoes(t *testing.T) {
	type line struct {
		Quantity int8 `json:"quantity"`
	}
	type input struct {
		OrderID string `json:"orderId"`
		Lines   []line `json:"lines"`
		N       int    `json:"n,string"`
	}
	bind := func(raw string) (input, error) {
		var in input
		err := (&Call{RawInput: json.RawMessage(raw)}).BindInput(&in)
		return in, err
	}
	in, err := bind(`{"ORDERID":"x","orderId":"A-1","n":"7"}`)
	require.NoError(t, err)
	require.Equal(t, input{OrderID: "A-1", N: 7}, in)

	for raw, want := range map[string]string{
		`{"orderId":"A","orderId":"B"}`:               "orderId: given twice; each key may appear once",
		`{"lines":[{"quantity":1},{"quantity":2.5}]}`: "lines[1].quantity: expected integer, got number 2.5",
		`{"lines":[{"quantity":300}]}`:                "lines[0].quantity: number 300 is out of range for this field",
		`{"lines":[{"quantity":1e3}]}`:                "lines[0].quantity: number 1000 is out of range for this field",
		`{"lines":{}}`:                                "lines: expected array, got object",
		`{"n":7}`:                                     "n: expected integer, got number",
		`{"orderId":1}`:                               "orderId: expected string, got number",
	} {
		_, err := bind(raw)
		require.Equal(t, CodeInvalidInput, ErrorCode(err), raw)
		require.Contains(t, err.Error(), want, raw)
	}
}
