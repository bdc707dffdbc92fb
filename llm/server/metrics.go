package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of its own
// (with the Go runtime's and the process's collectors).
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	queueDepth   prometheus.Gauge
	sessionsOpen prometheus.Gauge
	ttft         prometheus.Histogram
	tokenLatency prometheus.Histogram
	tokens       *prometheus.CounterVec
}

// latencyBuckets span a token's latency on a GPU (a few ms) to a long
// wait on a CPU adapter or behind a queue (a minute).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wgdelegate_requests_total",
		Help: "Requests answered, by endpoint and HTTP status."}, []string{"endpoint", "code"})
	m.queueDepth = prometheus.NewGauge(prometheus.GaugeOpts{Name: "wgdelegate_queue_depth",
		Help: "Requests waiting for a session (every session serving one)."})
	m.sessionsOpen = prometheus.NewGauge(prometheus.GaugeOpts{Name: "wgdelegate_sessions_open",
		Help: "Sessions open (busy or idle holding a conversation)."})
	m.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wgdelegate_time_to_first_token_seconds",
		Help: "Time from a request's arrival at the generation to its first token, queueing included.", Buckets: latencyBuckets})
	m.tokenLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wgdelegate_token_latency_seconds",
		Help: "Time between two generated tokens of a request.", Buckets: latencyBuckets})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wgdelegate_tokens_total",
		Help: "Tokens: prompt tokens prefilled, prompt tokens reused from a session's cache, tokens generated."}, []string{"kind"})
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wgdelegate_requests_in_flight",
		Help: "Requests being answered."}, func() float64 { return float64(s.InFlight()) })
	deviceWait := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wgdelegate_device_waiting",
		Help: "Generations waiting for their turn on the device."}, func() float64 {
		if sv := s.model.Load(); sv != nil {
			return float64(sv.Pool.Stats().Waiting)
		}
		return 0
	})
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "wgdelegate_ready",
		Help: "1 when the model is loaded and the server takes requests."}, func() float64 {
		if s.model.Load() != nil && !s.draining.Load() {
			return 1
		}
		return 0
	})
	m.reg.MustRegister(m.requests, m.queueDepth, m.sessionsOpen, m.ttft, m.tokenLatency, m.tokens, inflight, deviceWait, ready,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, k := range []string{"prompt", "reused", "completion"} {
		m.tokens.WithLabelValues(k)
	}
	return m
}

// request counts an answered request.
func (m *metrics) request(endpoint string, code int) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
