package wire

import (
	"fmt"
	"time"
)

// ClockWords says in words whose clock is ahead, from a skew signed as
// docs/PROTOCOL.md §10 signs every skew: the server's clock minus the t
// its sender signed with, in milliseconds, so positive when the sender's
// clock is behind. sender and server name the two clocks' owners:
//
//	ClockWords(-360000, "Median", "this server") == "Median's clock is 6 minutes ahead of this server's"
//
// The sign is read here and nowhere else, so every reading of a report
// says it the same way.
func ClockWords(skewMs int64, sender, server string) string {
	if skewMs == 0 {
		return fmt.Sprintf("%s's clock and %s's agree", sender, server)
	}
	way, d := "behind", skewMs
	if skewMs < 0 {
		way, d = "ahead of", -skewMs
	}
	if d < 0 { // the most negative int64 has no opposite
		d = 1<<63 - 1
	}
	return fmt.Sprintf("%s's clock is %s %s %s's", sender, Duration(d), way, server)
}

// Duration says a span of milliseconds in words, to the precision a person
// needs: "850 milliseconds", "2.5 seconds", "6 minutes", "1 minute 30
// seconds", "3 hours 5 minutes", "2 days 4 hours".
func Duration(ms int64) string {
	if ms < 0 {
		ms = -ms
	}
	d := time.Duration(min(ms, int64(1<<62)/int64(time.Millisecond))) * time.Millisecond
	switch {
	case d < time.Second:
		return plural(int64(d/time.Millisecond), "millisecond")
	case d < time.Minute:
		if d%time.Second < 100*time.Millisecond {
			return plural(int64(d/time.Second), "second")
		}
		return fmt.Sprintf("%.1f seconds", d.Seconds())
	case d < time.Hour:
		return pair(int64(d/time.Minute), "minute", int64(d%time.Minute/time.Second), "second")
	case d < 24*time.Hour:
		return pair(int64(d/time.Hour), "hour", int64(d%time.Hour/time.Minute), "minute")
	}
	return pair(int64(d/(24*time.Hour)), "day", int64(d%(24*time.Hour)/time.Hour), "hour")
}

// pair is "n unit" and, when m is not 0, " m small".
func pair(n int64, unit string, m int64, small string) string {
	if m == 0 {
		return plural(n, unit)
	}
	return plural(n, unit) + " " + plural(m, small)
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
