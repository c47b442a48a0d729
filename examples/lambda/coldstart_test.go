package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/lambdatest"
	"github.com/median-go/median/protocol"
)

// BenchmarkColdStart times a Lambda cold start of the built bootstrap
// against the test's Runtime API (docs/PERFORMANCE.md, "Cold start on
// Lambda"). Each iteration starts a fresh process, as Lambda starts an
// instance, and times from its start to its first request for an
// invocation (init-ms: the Go runtime, package init, main up to
// lambda.Start) and to its answer to the first invocation, a signed
// lookup_order in a Function URL event (first-call-ms; with the DynamoDB
// store it includes the claim and the save, in dynalite on loopback), and
// the CPU time the process used until then, all of its threads (cpu-ms),
// which other jobs on the machine change least. Each is the median of the
// iterations; ns/op is the first call's median too.
// Run it with -benchtime 20x: each iteration is a process.
func BenchmarkColdStart(b *testing.B) {
	if testing.Short() {
		b.Skip("starts processes")
	}
	bin := bootstrap(b, thisArch)
	key, err := protocol.ParseKey(testKey)
	if err != nil {
		b.Fatal(err)
	}
	db := startStore(b) // for every run of the sub-benchmarks
	for _, kind := range []string{"dynamodb", "memory"} {
		b.Run("store="+kind, func(b *testing.B) {
			env := []string{"MEDIAN_KEY=" + testKey}
			if kind == "dynamodb" {
				env = append(env, db.table(b, "median-calls-coldstart")...)
			}
			var inits, firsts, cpus []time.Duration
			for i := range b.N {
				body := fmt.Appendf(nil, `{"tool":"lookup_order","toolCallId":"call_cold_%d_%d","input":{"orderId":"A-1001"},`+
					`"context":{"conversationId":"conv_cold","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`, time.Now().UnixNano(), i)
				req, err := http.NewRequest(http.MethodPost, functionURL, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Median-Signature", key.Sign(time.Now(), body))
				event, err := lambdatest.Event(lambdatest.FunctionURL, req)
				if err != nil {
					b.Fatal(err)
				}
				f, err := launch(bin, env...)
				if err != nil {
					b.Fatal(err)
				}
				f.waitReady(b)
				ready := time.Since(f.start)
				ctx, cancel := context.WithTimeout(context.Background(), functionTimeout)
				out, err := f.invoke(ctx, event)
				first := time.Since(f.start)
				cancel()
				f.stop()
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Contains(out, []byte(`"statusCode":200`)) || !bytes.Contains(out, []byte(`A-1001`)) {
					b.Fatalf("the first call was not answered with the order: %s", out)
				}
				st := f.cmd.ProcessState // set: stop waited for the process
				inits, firsts, cpus = append(inits, ready), append(firsts, first), append(cpus, st.UserTime()+st.SystemTime())
			}
			b.ReportMetric(ms(median(inits)), "init-ms")
			b.ReportMetric(ms(median(firsts)), "first-call-ms")
			b.ReportMetric(ms(median(cpus)), "cpu-ms")
			b.ReportMetric(float64(median(firsts).Nanoseconds()), "ns/op")
		})
	}
}

// median returns the middle value of ds (the mean of the two middle ones
// for an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
