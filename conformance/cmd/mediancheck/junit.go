package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"time"

	"github.com/median-go/median/conformance"
)

// writeJUnit writes the report as JUnit XML (one testsuite named
// "mediancheck", one testcase per result, classname = group), for CI
// systems that show test reports. Cases that do not apply to the target are
// not testcases (they neither passed nor were skipped): each is a property
// of the testsuite named "not_applicable", its value the id and the reason.
func writeJUnit(w io.Writer, r conformance.Report) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
	}
	type property struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type testsuite struct {
		XMLName    xml.Name   `xml:"testsuite"`
		Name       string     `xml:"name,attr"`
		Tests      int        `xml:"tests,attr"`
		Failures   int        `xml:"failures,attr"`
		Skipped    int        `xml:"skipped,attr"`
		Time       string     `xml:"time,attr"`
		Properties []property `xml:"properties>property,omitempty"`
		Cases      []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Suites  []testsuite `xml:"testsuite"`
	}
	suite := testsuite{Name: "mediancheck", Tests: len(r.Verdicts) - count(r, "not_applicable"), Failures: count(r, "fail"), Skipped: count(r, "skip")}
	var total time.Duration
	for _, res := range r.Verdicts {
		total += res.Duration
		if res.Status == "not_applicable" {
			suite.Properties = append(suite.Properties, property{Name: "not_applicable", Value: res.ID + ": " + res.Message})
			continue
		}
		tc := testcase{Name: res.ID, Classname: res.Group, Time: seconds(res.Duration)}
		switch res.Status {
		case "fail":
			tc.Failure = &failure{Message: res.Message, Type: res.Section, Text: res.String()}
		case "skip":
			tc.Skipped = &skipped{Message: res.Message}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(testsuites{Suites: []testsuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
