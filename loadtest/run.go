package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/median-go/median/protocol"
)

// Options configures Run. URL and Key are required; the zero value of every
// other field picks the default shown.
type Options struct {
	// URL is the endpoint, e.g. http://127.0.0.1:8080/api/median. Its host
	// must be a loopback address or "localhost".
	URL string
	// Key is the Median key the server holds; valid requests are signed
	// with it.
	Key string
	// Concurrency is the number of clients sending at once; default 64.
	Concurrency int
	// Requests caps the number of requests; default 1,000,000.
	Requests int
	// Duration caps the run's length; default 15 s.
	Duration time.Duration
	// Timeout bounds each request; default 5 s. A request that times out
	// counts as a transport error.
	Timeout time.Duration
}

// Limits on Options, so that a run stays bounded whatever it is given.
const (
	MaxConcurrency = 1024
	MaxRequests    = 10_000_000
	MaxDuration    = 10 * time.Minute
)

// Report is the outcome of a run.
type Report struct {
	Requests        int            // answers received plus transport errors
	Elapsed         time.Duration  // from the first request to the last answer
	P50, P90, P99   time.Duration  // latency percentiles of received answers
	Max             time.Duration  // slowest received answer
	Statuses        map[int]int    // answers by HTTP status
	Kinds           map[Kind]int   // requests by kind
	TransportErrors int            // no answer: refused connection, reset, timeout
	Unexpected      map[string]int // answers that broke the contract, by reason
	ServerErrors    int            // answers with a 5xx status
}

// Throughput returns requests per second.
func (r Report) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Errors returns transport errors plus answers that broke the contract
// (wrong status, not JSON, wrong Content-Type). A clean run has none.
func (r Report) Errors() int {
	n := r.TransportErrors
	for _, c := range r.Unexpected {
		n += c
	}
	return n
}

// CheckLoopback returns an error unless rawURL is http(s) on a loopback
// host, so that a load run never leaves the machine.
func CheckLoopback(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("loadtest: URL %q: %w", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("loadtest: URL %q: scheme must be http or https", rawURL)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("loadtest: URL %q: the host must be a loopback address (127.0.0.1, ::1 or localhost); load runs never leave this machine", rawURL)
}

func (o *Options) setDefaults() error {
	if err := CheckLoopback(o.URL); err != nil {
		return err
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.Requests <= 0 {
		o.Requests = 1_000_000
	}
	if o.Duration <= 0 {
		o.Duration = 15 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Concurrency > MaxConcurrency || o.Requests > MaxRequests || o.Duration > MaxDuration {
		return fmt.Errorf("loadtest: at most %d clients, %d requests and %s per run", MaxConcurrency, MaxRequests, MaxDuration)
	}
	return nil
}

// Run sends the load mix to opts.URL from opts.Concurrency clients until
// opts.Requests have been sent, opts.Duration has passed or ctx ends, and
// reports what came back. It returns an error only for unusable options.
func Run(ctx context.Context, opts Options) (Report, error) {
	if err := opts.setDefaults(); err != nil {
		return Report{}, err
	}
	key, err := protocol.ParseKey(opts.Key)
	if err != nil {
		return Report{}, fmt.Errorf("loadtest: the key the server holds: %w", err)
	}
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce)
	run := "load_" + hex.EncodeToString(nonce)

	transport := &http.Transport{
		MaxIdleConns:        opts.Concurrency,
		MaxIdleConnsPerHost: opts.Concurrency,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		Proxy:               nil, // loopback only: never through a proxy
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	ctx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	var sent atomic.Int64
	results := make([]workerResult, opts.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &builder{key: key, prefix: fmt.Sprintf("%s_%d", run, w)}
			res := &results[w]
			res.init()
			for i := w; ctx.Err() == nil && sent.Add(1) <= int64(opts.Requests); i++ {
				res.do(ctx, client, opts.URL, b.next(mix[i%len(mix)], time.Now()))
			}
		}()
	}
	wg.Wait()
	return merge(results, time.Since(start)), nil
}

// workerResult is what one client saw.
type workerResult struct {
	latencies  []time.Duration
	statuses   map[int]int
	kinds      map[Kind]int
	transport  int
	unexpected map[string]int
}

func (w *workerResult) init() {
	w.statuses, w.kinds, w.unexpected = map[int]int{}, map[Kind]int{}, map[string]int{}
}

// do sends one request and records its answer.
func (w *workerResult) do(ctx context.Context, client *http.Client, url string, r request) {
	req, err := http.NewRequestWithContext(ctx, r.method, url, bytes.NewReader(r.body))
	if err != nil {
		w.unexpected["cannot build request: "+err.Error()]++
		return
	}
	if r.sig != "" {
		req.Header.Set("median-signature", r.sig)
	}
	req.Header.Set("Content-Type", "application/json")
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return // the run's duration ended while this request was in flight: not counted
		}
		w.kinds[r.kind]++
		w.transport++
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.kinds[r.kind]++
		w.transport++
		return
	}
	w.latencies = append(w.latencies, time.Since(begin))
	w.kinds[r.kind]++
	w.statuses[resp.StatusCode]++
	if reason := check(r, resp, body); reason != "" {
		w.unexpected[reason]++
	}
}

// check returns why an answer breaks the contract, or "".
func check(r request, resp *http.Response, body []byte) string {
	if want := expectedStatus[r.kind]; resp.StatusCode != want {
		return fmt.Sprintf("%s: status %d, want %d", r.kind, resp.StatusCode, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Sprintf("%s: Content-Type %q, want application/json", r.kind, ct)
	}
	switch r.kind {
	case KindManifest:
		if !bytes.HasPrefix(body, []byte(`{"tools":`)) {
			return "manifest: not a tool list"
		}
	case KindValid, KindReplay:
		if !bytes.HasPrefix(body, []byte(`{"result":{"orderId"`)) {
			return fmt.Sprintf("%s: not an order result: %.80s", r.kind, body)
		}
	case KindUnverified:
		if !bytes.Contains(body, []byte(`"not_signed_in"`)) {
			return fmt.Sprintf("unverified: not a not_signed_in refusal: %.80s", body)
		}
	default:
		if !bytes.HasPrefix(body, []byte(`{"error":{"code":`)) {
			return fmt.Sprintf("%s: not an error answer: %.80s", r.kind, body)
		}
	}
	return ""
}

// merge adds up the workers' results.
func merge(results []workerResult, elapsed time.Duration) Report {
	rep := Report{Elapsed: elapsed, Statuses: map[int]int{}, Kinds: map[Kind]int{}, Unexpected: map[string]int{}}
	var all []time.Duration
	for _, w := range results {
		all = append(all, w.latencies...)
		for s, n := range w.statuses {
			rep.Statuses[s] += n
			if s >= 500 {
				rep.ServerErrors += n
			}
		}
		for k, n := range w.kinds {
			rep.Kinds[k] += n
			rep.Requests += n
		}
		for reason, n := range w.unexpected {
			rep.Unexpected[reason] += n
		}
		rep.TransportErrors += w.transport
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	rep.P50, rep.P90, rep.P99 = percentile(all, 50), percentile(all, 90), percentile(all, 99)
	if len(all) > 0 {
		rep.Max = all[len(all)-1]
	}
	return rep
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}
