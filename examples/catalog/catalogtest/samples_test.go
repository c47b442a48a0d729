package catalogtest_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog/catalogtest"
)

// samples.json is what `mediancheck -samples` reads; it must say what
// Samples says (less the Check functions, which JSON cannot carry).
func TestSamplesFileMatchesSamples(t *testing.T) {
	fromFile, err := catalogtest.ReadSamplesFile("../samples.json")
	require.NoError(t, err)
	want := catalogtest.Samples()
	require.Len(t, fromFile, len(want))
	for i := range want {
		want[i].Check = nil
		assert.Equal(t, compact(t, want[i]), compact(t, fromFile[i]), "sample %d", i)
	}
}

func compact(t *testing.T, s conformance.ToolSample) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, json.Compact(&out, b))
	return out.String()
}
