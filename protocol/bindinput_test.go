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
		require.Equal(t, CodeInvalidInput, errorCode(err), raw)
		require.Contains(t, err.Error(), want, raw)
	}
}

// TestBindInputJSONNumber: encoding/json's json.Number keeps a number's
// literal, as with encoding/json, next to whole numbers written 5.0.
func TestBindInputJSONNumber(t *testing.T) {
	var in struct {
		Amount json.Number `json:"amount"`
		Count  int         `json:"count"`
	}
	c := &Call{RawInput: json.RawMessage(`{"amount":12.50,"count":3}`)}
	require.NoError(t, c.BindInput(&in))
	require.Equal(t, json.Number("12.50"), in.Amount)
	require.Equal(t, 3, in.Count)
	c = &Call{RawInput: json.RawMessage(`{"count":3.0,"amount":1e400}`)}
	require.NoError(t, c.BindInput(&in))
	require.Equal(t, json.Number("1e400"), in.Amount)
	require.Equal(t, 3, in.Count)
}
