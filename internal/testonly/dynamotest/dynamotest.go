// Package dynamotest starts a DynamoDB API of its own for the module's
// tests (protocol/dynamostore, lambdamedian, the examples): dynalite, a
// DynamoDB server in Node.js that keeps its tables in memory, as a child
// process on a free port of 127.0.0.1, stopped by PID when the test ends.
// Tests can pause, kill and restart it.
//
// It finds dynalite on PATH or in the directory .ci/run installs it into
// ([InstallLine]). Where it is missing the test is skipped with the install
// line; when CI=true it fails instead, so a CI machine without it cannot
// pass by skipping.
//
// dynalite answers the operations a replay store uses (CreateTable,
// DescribeTable, conditional PutItem, UpdateItem and DeleteItem, consistent
// GetItem) but differs from DynamoDB in two ways the tests must allow for:
// a failed condition returns no item even when asked to
// (ReturnValuesOnConditionCheckFailure), and UpdateTimeToLive and
// TransactWriteItems answer UnknownOperationException. It checks that a
// request is signed, not the signature: any credentials do.
//
// The package uses no AWS module (tests build their own client on
// [Server.URL]), so the SDK stays where the footprint test allows it.
package dynamotest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// Version is the dynalite release .ci/run installs.
const Version = "4.0.0"

// InstallLine installs dynalite where [Start] finds it (Node.js 20 or
// later and npm must be there: apt-get install nodejs npm).
const InstallLine = `npm install --prefix "$HOME/.cache/median-go/dynalite" dynalite@` + Version

// Region and the credentials below are what a client of the test server
// uses: dynalite accepts any.
const (
	Region          = "us-east-1"
	AccessKeyID     = "dynamotest"
	SecretAccessKey = "dynamotest"
)

// Server is a dynalite process a test started (see testsupport.Process
// for Pause, Resume, Kill and Restart; dynalite keeps its tables in
// memory, so a restarted server has none). It is killed when the test
// ends, whatever happens.
type Server struct {
	// URL is the server's endpoint, http://127.0.0.1:port, for the
	// client's BaseEndpoint.
	URL string
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	*testsupport.Process
}

// Bin returns the path of the dynalite command: on PATH, else under
// $HOME/.cache/median-go/dynalite (where [InstallLine] puts it); "" when
// neither holds it.
func Bin() string {
	if p, err := exec.LookPath("dynalite"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "median-go", "dynalite", "node_modules", ".bin", "dynalite")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Start starts dynalite on a free port of 127.0.0.1 and waits until it
// answers. It skips the test when dynalite is missing, or fails it when
// CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Bin()
	if bin == "" {
		testsupport.Missing(t, "dynamotest: dynalite is not installed (not on PATH nor under ~/.cache/median-go/dynalite): "+InstallLine)
		return nil
	}
	port := testsupport.FreePort(t)
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), Port: port}
	// Tables are ACTIVE after 50 ms rather than dynalite's 500: a test
	// still sees the CREATING state, briefly.
	s.Process = testsupport.StartProcess(t, "dynalite",
		[]string{bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "50"},
		func() error { return Ping(s.URL, 500*time.Millisecond) }, 20*time.Second)
	return s
}

// Ping sends one ListTables request to the DynamoDB API at url and
// expects 200: the server is up and speaks DynamoDB's JSON protocol.
func Ping(url string, timeout time.Duration) error {
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{"Limit":1}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	// dynalite wants a signed request; it does not check the signature.
	now := time.Now().UTC()
	req.Header.Set("X-Amz-Date", now.Format("20060102T150405Z"))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+AccessKeyID+"/"+now.Format("20060102")+"/"+Region+
		"/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0")
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ListTables answered %s", resp.Status)
	}
	return nil
}
