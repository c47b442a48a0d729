package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/dynamotest"
	"github.com/median-go/median/internal/testonly/lambdatest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol/dynamostore"
)

// testKey is the key the functions under test run with.
const testKey = "mk_test_lambda_0123456789abcdef0123456789abcdef"

// functionURL is where the test's Function URL is: the function answers
// any path, and the events carry this one.
const functionURL = "https://abcdefghij0123456789.lambda-url.us-east-1.on.aws/"

// memoryStoreWarning is the start of lambdamedian's warning about the
// in-memory store on Lambda.
const memoryStoreWarning = "median: this Lambda function keeps answers in the in-memory replay store"

// runnable skips a test that runs the built binary where it cannot run.
func runnable(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("runs the linux bootstrap binary")
	}
}

// store is one dynalite for a test, and a client of it.
type store struct {
	server *dynamotest.Server
	client *dynamodb.Client
}

func startStore(t testing.TB) *store {
	t.Helper()
	s := dynamotest.Start(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &store{server: s, client: dynamodb.New(dynamodb.Options{
		Region:       dynamotest.Region,
		BaseEndpoint: aws.String(s.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: dynamotest.AccessKeyID, SecretAccessKey: dynamotest.SecretAccessKey}, nil
		}),
		HTTPClient: &http.Client{Transport: tr},
	})}
}

// table creates a table of the store's, as an operator does before the
// first deploy, and returns the function's environment for it.
func (s *store) table(t testing.TB, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dynamostore.CreateTable(ctx, s.client, dynamostore.Options{Table: name}); err != nil {
		t.Fatal(err)
	}
	return []string{TableEnv + "=" + name, "AWS_ENDPOINT_URL_DYNAMODB=" + s.server.URL}
}

// items counts the items of a table.
func (s *store) items(t *testing.T, name string) int32 {
	t.Helper()
	out, err := s.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(name), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

// do serves requests through the function as kind's service does.
func (f *function) do(kind lambdatest.Kind) func(*http.Request) (*http.Response, error) {
	return lambdatest.Function{Kind: kind, Timeout: functionTimeout, Invoke: f.invoke}.Do
}

// samples are the tools' samples in the file README.md gives mediancheck.
func samples(t *testing.T) []conformance.ToolSample {
	t.Helper()
	file, err := os.Open(filepath.Join("..", "catalog", "samples.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s, err := conformance.ReadSamples(file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformanceThroughTheRuntimeAPI runs the built bootstrap as Lambda
// does, its replay store in dynalite, and passes the whole conformance
// suite through each kind of event; the key cases start the binary again
// with each bad key.
func TestConformanceThroughTheRuntimeAPI(t *testing.T) {
	runnable(t)
	bin := bootstrap(t, thisArch)
	db := startStore(t)
	for i, kind := range lambdatest.Kinds() {
		t.Run(kind.String(), func(t *testing.T) {
			env := db.table(t, fmt.Sprintf("median-calls-%d", i))
			f := startFunction(t, bin, append(env, "MEDIAN_KEY="+testKey)...)
			f.waitReady(t)
			target := conformance.Target{Do: f.do(kind), URL: functionURL, Key: testKey, Replay: true, Tools: samples(t)}
			if kind == lambdatest.ALB {
				// An ALB target group without multi-value headers passes on
				// only the last line of a header sent twice (AWS's documented
				// behaviour, which lambdatest follows): a signature a proxy
				// split over two lines cannot reach the function whole.
				target.Skip = []string{"signature/repeated-header", "signature/repeated-header-two-t"}
			}
			if kind == lambdatest.ALB || kind == lambdatest.ALBMultiValue {
				// The example is a Function URL's and keeps the default body
				// limit, 1 MiB, above an ALB's own 1 MB: the load balancer
				// answers the suite's oversized bodies itself. Behind an ALB,
				// MaxBodyBytes goes below 1 MB (lambdamedian's doc); the
				// adapter table runs the suite so.
				target.Skip = append(target.Skip, "body/oversized", "body/oversized-chunked")
			}
			target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
				g, err := launch(bin, append(env, "MEDIAN_KEY="+key)...)
				if err != nil {
					return nil, err
				}
				t.Cleanup(g.stop)
				return g.do(kind), nil
			}
			conformance.Run(t, target)
			if n := db.items(t, fmt.Sprintf("median-calls-%d", i)); n == 0 {
				t.Errorf("the suite's calls left no item in the DynamoDB table: the function did not use the store")
			}
			if strings.Contains(f.log.String(), memoryStoreWarning) {
				t.Errorf("a function with %s set warns about the in-memory store:\n%s", TableEnv, f.log)
			}
			if e := f.rt.InitError(); e != nil {
				t.Errorf("the function reported an init error: %s", e)
			}
		})
	}
}

// The tools' results, as the tests read them.
type (
	orderResult struct {
		OrderID string `json:"orderId"`
		Status  string `json:"status"`
	}
	cancellationResult struct {
		OrderID   string `json:"orderId"`
		Cancelled bool   `json:"cancelled"`
	}
)

// TestReplayAcrossInstances: two instances share the table. A call
// answered by one is answered by the other with the same bytes, without
// running the tool there: the second instance's orders still show the
// order processing.
func TestReplayAcrossInstances(t *testing.T) {
	runnable(t)
	bin := bootstrap(t, thisArch)
	env := append(startStore(t).table(t, "median-calls"), "MEDIAN_KEY="+testKey)
	a, b := startFunction(t, bin, env...), startFunction(t, bin, env...)
	target := func(f *function) conformance.Target {
		return conformance.Target{Do: f.do(lambdatest.FunctionURL), URL: functionURL, Key: testKey}
	}
	cancel := conformance.ToolSample{Tool: "cancel_order", Input: orderInput{OrderID: "A-1001"}, ApprovedBy: "Ada"}
	first := conformance.CallTool[cancellationResult](t, target(a), cancel)
	if !first.Result.Cancelled {
		t.Fatalf("the first instance did not cancel: %s", first.Raw)
	}
	cancel.ToolCallID = first.ToolCallID
	again := conformance.CallTool[cancellationResult](t, target(b), cancel)
	if string(again.Raw) != string(first.Raw) {
		t.Fatalf("the second instance answered the repeat\n%s\nnot the first answer\n%s", again.Raw, first.Raw)
	}
	lookup := conformance.ToolSample{Tool: "lookup_order", Input: orderInput{OrderID: "A-1001"}, Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"}}
	for f, want := range map[*function]string{a: "cancelled", b: "processing"} {
		if got := conformance.CallTool[orderResult](t, target(f), lookup).Result.Status; got != want {
			t.Errorf("an instance's order is %q after the call and its repeat, want %q: the tool ran on the instance that got the repeat", got, want)
		}
	}
}

// TestMemoryStoreWarning: without a table the function still serves, on
// the in-memory store, and its log says at start that this protects one
// instance only.
func TestMemoryStoreWarning(t *testing.T) {
	runnable(t)
	f := startFunction(t, bootstrap(t, thisArch), "MEDIAN_KEY="+testKey)
	f.waitReady(t)
	// The process's output reaches f.log through exec's copying goroutine,
	// a moment after the process wrote it.
	testsupport.Eventually(t, "a function without "+TableEnv+" warns about the in-memory store", func() bool {
		return strings.Contains(f.log.String(), memoryStoreWarning)
	})
	r := conformance.CallTool[orderResult](t, conformance.Target{Do: f.do(lambdatest.FunctionURL), URL: functionURL, Key: testKey},
		conformance.ToolSample{Tool: "lookup_order", Input: orderInput{OrderID: "A-1001"}, Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"}})
	if r.Result.Status != "processing" {
		t.Errorf("lookup_order on the in-memory store answered %d %s", r.Status, r.Raw)
	}
}

// TestKeyFile: the key may come from the file MEDIAN_KEY_FILE names, as
// the core reads it.
func TestKeyFile(t *testing.T) {
	runnable(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := os.WriteFile(path, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFunction(t, bootstrap(t, thisArch), "MEDIAN_KEY_FILE="+path)
	r := conformance.CallTool[orderResult](t, conformance.Target{Do: f.do(lambdatest.FunctionURL), URL: functionURL, Key: testKey},
		conformance.ToolSample{Tool: "lookup_order", Input: orderInput{OrderID: "A-1001"}, Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"}})
	if r.Result.OrderID != "A-1001" {
		t.Errorf("a call signed with the key in MEDIAN_KEY_FILE answered %d %s", r.Status, r.Raw)
	}
}

// TestNotAnHTTPEvent: an event of no HTTP shape is the invocation's error,
// reported to the Runtime API as Lambda expects, and the function keeps
// serving.
func TestNotAnHTTPEvent(t *testing.T) {
	runnable(t)
	f := startFunction(t, bootstrap(t, thisArch), "MEDIAN_KEY="+testKey)
	ctx, cancel := context.WithTimeout(context.Background(), functionTimeout)
	defer cancel()
	_, err := f.invoke(ctx, []byte(`{"Records":[{"eventSource":"aws:sqs"}]}`))
	var fe *functionError
	if !errors.As(err, &fe) {
		t.Fatalf("an SQS event was answered %v, want the invocation's error", err)
	}
	r := conformance.CallTool[orderResult](t, conformance.Target{Do: f.do(lambdatest.FunctionURL), URL: functionURL, Key: testKey},
		conformance.ToolSample{Tool: "lookup_order", Input: orderInput{OrderID: "A-1001"}, Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"}})
	if r.Result.OrderID != "A-1001" {
		t.Errorf("after the failed invocation the function answered %d %s", r.Status, r.Raw)
	}
}

// TestBadTableNameStopsInit: a table name DynamoDB cannot have stops the
// function during init, with a log line naming the problem, before it asks
// for an invocation (Lambda then reports the init as failed).
func TestBadTableNameStopsInit(t *testing.T) {
	runnable(t)
	f := startFunction(t, bootstrap(t, thisArch), "MEDIAN_KEY="+testKey, TableEnv+"=no such table")
	select {
	case <-f.gone:
	case <-time.After(20 * time.Second):
		t.Fatalf("the function did not exit; its log:\n%s", f.log)
	}
	select {
	case <-f.rt.firstGet:
		t.Error("the function asked for an invocation with an unusable table name")
	default:
	}
	if f.err == nil || !strings.Contains(f.log.String(), `the table name \"no such table\"`) {
		t.Errorf("exit %v; the log does not name the table problem:\n%s", f.err, f.log)
	}
}
