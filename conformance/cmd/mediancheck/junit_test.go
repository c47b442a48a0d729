package main

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
)

func TestWriteJUnit(t *testing.T) {
	rep := conformance.Report{Verdicts: []conformance.Verdict{
		{CaseInfo: conformance.CaseInfo{ID: "a/x", Group: "a", Section: "§1"}, Status: "pass"},
		{CaseInfo: conformance.CaseInfo{ID: "a/y", Group: "a", Section: "§1"}, Status: "fail", Message: `got <403> & "more"`, Expected: "401"},
		{CaseInfo: conformance.CaseInfo{ID: "b/z", Group: "b", Section: "§2"}, Status: "skip", Message: "needs a sample"},
		{CaseInfo: conformance.CaseInfo{ID: "k/n", Group: "k", Section: "§1.2"}, Status: "not_applicable", Message: "deployed"},
	}}
	assert.Equal(t, "N/A k/n (§1.2): deployed", rep.Verdicts[3].String())
	assert.Equal(t, 1, count(rep, "not_applicable"))
	var buf bytes.Buffer
	require.NoError(t, writeJUnit(&buf, rep))
	var doc struct {
		Suite struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Props    []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Class   string `xml:"classname,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc), buf.String())
	assert.Equal(t, 3, doc.Suite.Tests, "a case that does not apply is not a testcase")
	require.Len(t, doc.Suite.Props, 1)
	assert.Equal(t, "not_applicable", doc.Suite.Props[0].Name)
	assert.Equal(t, "k/n: deployed", doc.Suite.Props[0].Value)
	assert.Equal(t, 1, doc.Suite.Failures)
	assert.Equal(t, 1, doc.Suite.Skipped)
	require.Len(t, doc.Suite.Cases, 3)
	assert.Equal(t, `got <403> & "more"`, doc.Suite.Cases[1].Failure.Message)
	assert.NotNil(t, doc.Suite.Cases[2].Skipped)
	assert.Equal(t, "b", doc.Suite.Cases[2].Class)
}
