package bench

import (
	"fmt"
	"slices"
	"time"
)

// Sample is a set of timings of one measured thing.
type Sample []time.Duration

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of s by the nearest-rank
// method, or 0 for an empty sample.
func (s Sample) Quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(q*float64(len(c))+0.999999) - 1
	return c[max(0, min(i, len(c)-1))]
}

// Median returns the median of s.
func (s Sample) Median() time.Duration { return s.Quantile(0.5) }

// P90 returns the 90th percentile of s.
func (s Sample) P90() time.Duration { return s.Quantile(0.9) }

// Ms formats d in milliseconds with a precision that suits its size.
func Ms(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.2f ms", ms)
	}
}

// Ratio formats how many times slower b is than a ("3.2×"), or "–" when
// either is zero.
func Ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", float64(b)/float64(a))
}
