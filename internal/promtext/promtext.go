// Package promtext reads a /metrics body in the Prometheus text format
// from a pod the operator does not control: at most a given number of
// bytes, with the format's own parser, so a label's value is all of it
// and never another label's.
package promtext

import (
	"fmt"
	"io"
	"math"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse reads body's metric families, reading at most limit bytes. A
// body past the limit, or not in the text format, fails.
func Parse(body io.Reader, limit int64) (map[string]*dto.MetricFamily, error) {
	lr := &io.LimitedReader{R: body, N: limit + 1}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("read /metrics: more than %d bytes", limit)
	}
	if err != nil {
		return nil, fmt.Errorf("/metrics is not in the Prometheus text format: %w", err)
	}
	return families, nil
}

// Value is s's value, of whichever type the body declared; NaN for a
// type without one value (a histogram, a summary): Plain says which.
func Value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Untyped != nil:
		return s.GetUntyped().GetValue()
	}
	return math.NaN()
}

// Plain reports whether s has one value: a counter, a gauge or untyped.
func Plain(s *dto.Metric) bool { return s.Counter != nil || s.Gauge != nil || s.Untyped != nil }

// Label is the value of s's label key, "" without it.
func Label(s *dto.Metric, key string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == key {
			return l.GetValue()
		}
	}
	return ""
}
