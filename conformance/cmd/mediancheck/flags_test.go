package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestEndpointFlags: every subcommand that talks to an endpoint takes the
// shared -url, -key-env and -timeout, exits 0 on -h (listing them) and 2 on
// an unknown flag or a missing key, and those that parse the key say when
// it is not usable.
func TestEndpointFlags(t *testing.T) {
	badKey := func(name string) string {
		if name == "BAD_KEY" {
			return "not-a-median-key"
		}
		return ""
	}
	for _, cmd := range [][]string{nil, {"call"}, {"manifest"}, {"diagnostics"}, {"inspect"}} {
		name := strings.Join(append([]string{"mediancheck"}, cmd...), " ")
		run1 := func(getenv func(string) string, args ...string) (int, string) {
			var out, errb bytes.Buffer
			code := run(append(append([]string{}, cmd...), args...), &out, &errb, getenv)
			return code, errb.String()
		}
		code, help := run1(env, "-h")
		if code != exitOK {
			t.Errorf("%s -h: exit %d, want %d", name, code, exitOK)
		}
		for _, flag := range []string{"-url", "-key-env", "-timeout"} {
			if !strings.Contains(help, flag) {
				t.Errorf("%s -h does not list %s:\n%s", name, flag, help)
			}
		}
		if code, _ := run1(env, "-bogus"); code != exitUsage {
			t.Errorf("%s -bogus: exit %d, want %d", name, code, exitUsage)
		}
		args := []string{"-url", "http://127.0.0.1:1/median", "-key-env", "UNSET_KEY", "-timeout", "1s", "-tool", "echo"}
		if len(cmd) == 0 || cmd[0] != "call" {
			args = args[:len(args)-2]
		}
		code, msg := run1(env, args...)
		if code != exitUsage || !strings.Contains(msg, "UNSET_KEY is not set") {
			t.Errorf("%s without a key: exit %d, stderr %q", name, code, msg)
		}
		if len(cmd) == 1 && cmd[0] != "inspect" {
			args[3] = "BAD_KEY"
			code, msg = run1(badKey, args...)
			if code != exitUsage || !strings.Contains(msg, name+": the key in $BAD_KEY is not usable") {
				t.Errorf("%s with an unusable key: exit %d, stderr %q", name, code, msg)
			}
		}
	}
}
