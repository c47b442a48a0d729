package ratelimit

import (
	"fmt"
	"time"
)

// InWords says a wait in words the agent can relay: "about a second",
// "about 20 seconds", "about 3 minutes", "about 2 hours". It rounds up, so
// a call made after the wait is allowed: to whole seconds below ten
// seconds, to 5 seconds below a minute, to whole minutes below an hour, to
// whole hours beyond.
func InWords(d time.Duration) string {
	switch {
	case d <= time.Second:
		return "about a second"
	case d < 10*time.Second:
		return fmt.Sprintf("about %d seconds", ceilDiv(d, time.Second))
	case d < 55*time.Second:
		return fmt.Sprintf("about %d seconds", 5*ceilDiv(d, 5*time.Second))
	case d <= time.Minute:
		return "about a minute"
	case d <= 59*time.Minute:
		return fmt.Sprintf("about %d minutes", ceilDiv(d, time.Minute))
	case d <= time.Hour:
		return "about an hour"
	}
	return fmt.Sprintf("about %d hours", ceilDiv(d, time.Hour))
}

// ceilDiv is d/unit rounded up.
func ceilDiv(d, unit time.Duration) int64 {
	return int64((d + unit - 1) / unit)
}
