package protocol

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
)

// The environment variables that name key files, read again while the
// server runs (PROTOCOL.md §1.2): a mounted secret that changes in place.
const (
	keyFileEnv         = "MEDIAN_KEY_FILE"
	previousKeyFileEnv = "MEDIAN_KEY_PREVIOUS_FILE"
)

// Defaults of the key reads.
const (
	defaultKeyFilePoll      = 2 * time.Second  // a change is in force within 10 s
	defaultKeySourceRefresh = time.Minute      // a secret manager is asked once a minute
	keyReadTimeout          = 10 * time.Second // bounds one read: a Config.KeySource call, or the key files
	maxKeyFileBytes         = 4 << 10          // a key file is one line; anything longer is not one
)

// keySource is where a Handler's keys come from when they may change while
// the server runs.
type keySource struct {
	name    string        // named in the log: "MEDIAN_KEY_FILE", "Config.KeySource"
	period  time.Duration // how often read is called again
	timeout time.Duration // bounds one read, even one that ignores its context
	read    func(ctx context.Context) readKeys
}

// readKeys is what one read of a keySource gave: the keys with their names,
// the current one first, then those being retired; or, in err, why it gave
// no current key, with keys holding only those being retired. detail has
// attributes for the log (a file's path, the source's own error; never a
// key).
type readKeys struct {
	keys, names []string
	err         *Error
	detail      []any
	// retiring, with err, says that the read still told which keys are
	// being retired (keys: the key files were read; false when a source
	// failed and said nothing), so that any other is dropped all the same.
	retiring bool
	// dropped are the keys being retired the read could not give.
	dropped []droppedKey
}

// droppedKey is a key being retired that a read could not give (its file
// cannot be read, or what it holds is not a usable key): it is no longer
// accepted, and the log and diagnostics say why.
type droppedKey struct {
	name   string // where it came from: "MEDIAN_KEY_PREVIOUS_FILE", "Config.KeySource key 2 of 2"
	err    *Error
	detail []any
}

// keySourceFor returns the source of cfg's keys that is read again while the
// server runs, or nil when the keys are read once (Config.Keys, MEDIAN_KEY).
func keySourceFor(cfg Config) (*keySource, error) {
	if cfg.KeyRefresh < 0 {
		return nil, fmt.Errorf("Config.KeyRefresh is %s: give a positive period, or 0 for the default", cfg.KeyRefresh)
	}
	switch {
	case len(cfg.Keys) > 0 && cfg.KeySource != nil:
		return nil, errors.New("both Config.Keys and Config.KeySource are set: keep one (Config.KeySource for keys that change while the server runs)")
	case len(cfg.Keys) > 0:
		return nil, nil
	case cfg.KeySource != nil:
		return &keySource{name: "Config.KeySource", period: orDefault(cfg.KeyRefresh, defaultKeySourceRefresh), timeout: keyReadTimeout, read: readKeySource(cfg.KeySource)}, nil
	}
	current, previous := os.Getenv(keyFileEnv), os.Getenv(previousKeyFileEnv)
	if current == "" && previous == "" {
		return nil, nil
	}
	return &keySource{name: keyFileEnv, period: orDefault(cfg.KeyRefresh, defaultKeyFilePoll), timeout: keyReadTimeout, read: readKeyFiles(current, previous)}, nil
}

// readKeySource wraps Config.KeySource: the first key it returns is the
// current one, the others are being retired.
func readKeySource(source func(context.Context) ([]string, error)) func(context.Context) readKeys {
	return func(ctx context.Context) readKeys {
		keys, err := source(ctx)
		if err != nil {
			// Its text may hold anything: it goes to the log only.
			return readKeys{err: newError(CodeMissingSecret, "Config.KeySource returned an error, so no key could be read; the server's log has it"), detail: []any{"error", errorText(err)}}
		}
		if len(keys) == 0 {
			return readKeys{err: newError(CodeMissingSecret, "Config.KeySource returned no key: return the key from Median's dashboard first, then any key being retired")}
		}
		names := make([]string, len(keys))
		for i := range keys {
			names[i] = fmt.Sprintf("Config.KeySource key %d of %d", i+1, len(keys))
		}
		return readKeys{keys: keys, names: names}
	}
}

// readKeyFiles reads MEDIAN_KEY_FILE (the current key) and, when set,
// MEDIAN_KEY_PREVIOUS_FILE (the key being retired). A current-key file
// that is missing, empty or cannot be read is missing_secret, like an
// unset MEDIAN_KEY; a previous-key file that is missing or empty means no
// previous key, and one that cannot be read drops it (invalid_median_key,
// logged): an operator revokes a leaked key by emptying, deleting or
// overwriting that file, and nothing they write there keeps it in force.
func readKeyFiles(current, previous string) func(context.Context) readKeys {
	return func(context.Context) readKeys {
		if current == "" {
			return readKeys{err: errorf(CodeMissingSecret, "%s is set but %s is not: name the file that holds the key from Median's dashboard in %s", previousKeyFileEnv, keyFileEnv, keyFileEnv)}
		}
		got := readKeys{keys: []string{}, names: []string{}, detail: []any{"path", current}, retiring: true}
		key, err := readKeyFile(current)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			got.err = errorf(CodeMissingSecret, "%s names a file that does not exist (yet): it is read again every few seconds and its key is used once it holds one", keyFileEnv)
		case err != nil:
			got.err, got.detail = errorf(CodeMissingSecret, "%s names a file that cannot be read; the server's log says why", keyFileEnv), append(got.detail, "error", err)
		case strings.TrimSpace(key) == "":
			got.err = errorf(CodeMissingSecret, "%s names an empty file: write the key from Median's dashboard into it", keyFileEnv)
		default:
			got.keys, got.names = append(got.keys, key), append(got.names, keyFileEnv)
		}
		if previous == "" {
			return got
		}
		prev, err := readKeyFile(previous)
		switch {
		case errors.Is(err, fs.ErrNotExist) || err == nil && strings.TrimSpace(prev) == "":
			// No key being retired.
		case err != nil:
			got.dropped = []droppedKey{{previousKeyFileEnv,
				errorf(CodeInvalidMedianKey, "%s names a file that cannot be read, so no key being retired is accepted; the server's log says why (remove the variable, or empty the file, when no key is being retired)", previousKeyFileEnv),
				[]any{"previousPath", previous, "error", err}}}
		default:
			got.keys, got.names = append(got.keys, prev), append(got.names, previousKeyFileEnv)
			got.detail = append(got.detail, "previousPath", previous)
		}
		return got
	}
}

// readKeyFile returns the content of the key file at path, following
// symbolic links (a mounted secret is swapped by a link), at most
// maxKeyFileBytes.
func readKeyFile(path string) (string, error) {
	// Stat first: opening a named pipe would block until a writer comes.
	if st, err := os.Stat(path); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxKeyFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes: it is not a key file", path, maxKeyFileBytes)
	}
	return string(b), nil
}

// keyReader reads a Handler's keys from a keySource, at New and then every
// period, until the Handler is closed.
type keyReader struct {
	h      *Handler
	src    *keySource
	last   [sha256.Size]byte // digest of the last read: an unchanged read is not parsed or logged again
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
}

// startKeyReader reads the keys from src once and starts reading them again
// every src.period in the background; the returned keyReader stops it.
func startKeyReader(h *Handler, src *keySource) *keyReader {
	ctx, cancel := context.WithCancel(context.Background())
	r := &keyReader{h: h, src: src, cancel: cancel}
	if src.name == keyFileEnv && (os.Getenv(keyEnv) != "" || os.Getenv(previousKeyEnv) != "") {
		h.cfg.Logger.Warn("median: MEDIAN_KEY and MEDIAN_KEY_PREVIOUS are ignored: the keys come from the files MEDIAN_KEY_FILE and MEDIAN_KEY_PREVIOUS_FILE name")
	}
	r.read(ctx)
	r.done.Add(1)
	go r.loop(ctx)
	return r
}

func (r *keyReader) loop(ctx context.Context) {
	defer r.done.Done()
	t := time.NewTicker(r.src.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.read(ctx)
		}
	}
}

// stop ends the background reads and waits for the last one to return.
func (r *keyReader) stop() {
	r.once.Do(func() {
		r.cancel()
		r.done.Wait()
	})
}

// read reads the keys once. A read that gives usable keys puts them in
// force; one that gives none keeps the keys in force (or, when none ever
// was, answers 500 with its reason) and is logged as an error naming the
// source, never the key. A read that gives what the last one gave does
// nothing.
//
// The source runs in its own goroutine (a panic there is recovered and
// logged with its stack), and read waits for it until it returns or its
// timeout passes, whichever is first: a source that ignores its context
// holds neither New nor Close past the timeout, and one that watches it
// returns when Close cancels ctx, so Close still waits for the last read.
func (r *keyReader) read(ctx context.Context) {
	readCtx, cancel := context.WithTimeout(ctx, r.src.timeout)
	defer cancel()
	done := make(chan readKeys, 1) // buffered: a read that comes back late never blocks
	go func() {
		got, err := protect(r.h, readCtx, r.src.name, nil, func() (readKeys, error) {
			return r.src.read(readCtx), nil
		})
		if err != nil { // the source panicked; protect logged it with its stack
			got = readKeys{err: newError(CodeMissingSecret, r.src.name+" panicked, so no key could be read; the server's log has its stack")}
		}
		done <- got
	}()
	timer := time.NewTimer(r.src.timeout)
	defer timer.Stop()
	var got readKeys
	select {
	case got = <-done:
	case <-timer.C:
		got = readKeys{err: errorf(CodeMissingSecret, "%s did not return within %s, so no key could be read", r.src.name, r.src.timeout)}
	}
	r.apply(ctx, got)
}

// apply puts the keys of one read in force, or logs why it cannot. A read
// that gives no usable current key keeps the keys in force, but a key
// being retired stays only while the read still gives it (when it says
// which: the key files always do).
func (r *keyReader) apply(ctx context.Context, got readKeys) {
	h := r.h
	if ctx.Err() != nil {
		return // closed while reading: whatever came back is not trusted
	}
	d := digestRead(got)
	if d == r.last {
		return
	}
	r.last = d
	p := parseRead(got)
	prev, now := h.keys.Load(), h.cfg.Now()
	if p.err != nil {
		next := failedKeyring(p.err, r.src.name, now, prev)
		if next.err == nil && p.retiring {
			next.retireAllBut(p.keys)
		}
		h.keys.Store(next)
		args := append([]any{"source", r.src.name, "code", p.err.Code, "error", p.err.Message}, got.detail...)
		if next.err == nil {
			h.cfg.Logger.ErrorContext(ctx, "median: a new read of the keys gave no usable key; the current key stays in force", append(args, "keys", fingerprintList(next.keys))...)
		} else {
			h.cfg.Logger.ErrorContext(ctx, "median: no usable key yet; the endpoint answers 500 until the source gives one", args...)
		}
		h.logDropped(ctx, p.dropped)
		return
	}
	next := newKeyring(p.keys, p.names, prev)
	if len(p.dropped) > 0 { // diagnostics show the first
		next.readErr, next.readSource, next.readAt = p.dropped[0].err, p.dropped[0].name, now
	}
	h.keys.Store(next)
	h.logDropped(ctx, p.dropped)
	msg := "median: new keys in force"
	if prev == nil || prev.err != nil {
		msg = "median: keys in force" // the first usable read: the log shows which keys the server started with
	}
	h.cfg.Logger.InfoContext(ctx, msg, "source", r.src.name, "keys", fingerprintList(p.keys))
}

// logDropped logs each key being retired that a read dropped.
func (h *Handler) logDropped(ctx context.Context, dropped []droppedKey) {
	for _, k := range dropped {
		args := append([]any{"source", k.name, "code", k.err.Code, "error", k.err.Message}, k.detail...)
		h.cfg.Logger.ErrorContext(ctx, "median: a key being retired is not usable, so it is no longer accepted", args...)
	}
}

// digestRead is a digest of what a read gave: the keys, or the failure.
func digestRead(got readKeys) [sha256.Size]byte {
	d := sha256.New()
	put := func(s string) {
		_ = binary.Write(d, binary.BigEndian, uint64(len(s)))
		d.Write([]byte(s))
	}
	for i := range got.keys {
		put(got.keys[i])
		put(got.names[i])
	}
	if got.err != nil {
		put(string(got.err.Code))
		put(got.err.Message)
		put(fmt.Sprint(got.detail...))
	}
	if got.retiring {
		put("retiring")
	}
	for _, k := range got.dropped {
		put(k.name)
		put(k.err.Message)
		put(fmt.Sprint(k.detail...))
	}
	var out [sha256.Size]byte
	d.Sum(out[:0])
	return out
}

// fingerprintList lists keys by fingerprint, for the log.
func fingerprintList(keys []Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.st.fingerprint
	}
	return out
}

// parsedRead is a read of keys, parsed: the keys to put in force with
// their names, the current one first; or, in err, why there is no usable
// current key, with keys holding the usable keys being retired the read
// gave (when retiring says it told them). dropped are the keys being
// retired that are not usable.
type parsedRead struct {
	keys     []Key
	names    []string
	err      *Error
	retiring bool
	dropped  []droppedKey
}

// parseRead parses what a read gave: the current key must be usable; a
// key being retired that is not is dropped, and the others kept.
func parseRead(got readKeys) parsedRead {
	p := parsedRead{err: got.err, retiring: got.retiring, dropped: got.dropped}
	retiring, names := got.keys, got.names
	if p.err == nil {
		current, err := parseNamedKeys(got.keys[:1], got.names[:1])
		if err != nil {
			p.err, p.retiring = err, true // the read still told which keys are being retired
		} else {
			p.keys, p.names = current, got.names[:1:1]
		}
		retiring, names = got.keys[1:], got.names[1:]
	}
	for i := range retiring {
		k, err := parseNamedKeys(retiring[i:i+1], names[i:i+1])
		if err != nil {
			p.dropped = append(p.dropped, droppedKey{name: names[i], err: errorf(CodeInvalidMedianKey, "%s, so it is no longer accepted", err.Message)})
			continue
		}
		p.keys, p.names = append(p.keys, k[0]), append(p.names, names[i])
	}
	return p
}

// parseNamedKeys parses keys read from a source, naming each in its error;
// the first is the current key (empty: missing_secret), any other one that
// is not usable, empty included, is invalid_median_key.
func parseNamedKeys(keys, names []string) ([]Key, *Error) {
	out := make([]Key, 0, len(keys))
	for i, s := range keys {
		source := names[i]
		if source == keyFileEnv || source == previousKeyFileEnv {
			source = "the key in " + source
		}
		k, err := parseKeyFrom(s, source)
		if err != nil {
			code := err.Code
			if i > 0 {
				code = CodeInvalidMedianKey
			}
			return nil, errorf(code, "%s", err.Message)
		}
		out = append(out, k)
	}
	return out, nil
}

// Close stops what the Handler runs in the background: the reads of keys
// that change while the server runs (MEDIAN_KEY_FILE, [Config.KeySource]),
// the renewal of the claims of calls that still run, and the saving again
// of answers a shared store failed to save (each answer still waiting is
// given up, and logged: a repeat of its call may run the tool again once
// its claim's lease ends). Call it when the Handler is no longer used,
// after the server has shut down (http.Server.Shutdown waits for the
// calls that run); it waits for a read, renewal or save under way to end.
// The Handler still answers after Close, under the keys in force, but
// renews no claim and saves no answer again. It is safe to call more than
// once. It returns nil.
func (h *Handler) Close() error {
	if h.keyReader != nil {
		h.keyReader.stop()
	}
	if h.renewals != nil {
		h.renewals.close() // also ends a save under way
		if left := h.resaves.close(); left > 0 {
			h.cfg.Logger.Error("median: Close gave up answers that were waiting to be saved again in the replay store; repeats of their calls may run their tools again once their claims' leases end", "answers", left)
		}
	}
	return nil
}
