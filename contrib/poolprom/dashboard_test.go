package poolprom_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/poolprom"
	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/pool"
)

// The dashboard shipped in the module's folder queries only the metrics
// the collectors export, by labels they (or the scrape, or the "pool"
// ConstLabel the dashboard tells pools apart by) put on them, and shows
// every metric they export. The metrics are gathered from a registry with
// both collectors on real pools, PerClass on.
func TestDashboardQueriesOnlyExportedMetricsAndShowsEveryOne(t *testing.T) {
	exported := exportedFamilies(t)
	queries := dashboardQueries(t, "dashboard.json")
	require.NotEmpty(t, queries)
	for _, p := range dashboardProblems(t, queries, exported) {
		t.Error(p)
	}
}

// The check above finds a metric the collectors do not export (a typo, a
// histogram suffix on a counter), a label they do not put on it, and an
// exported metric no query shows.
func TestDashboardCheckFindsWhatIsWrong(t *testing.T) {
	exported := exportedFamilies(t)
	queries := []query{
		{where: "typo", expr: `rate(poolkit_pool_acquire_total[5m])`},
		{where: "suffix of a counter", expr: `rate(poolkit_pool_acquires_total_count[5m])`},
		{where: "histogram", expr: `histogram_quantile(0.9, sum by (le) (rate(poolkit_pool_blocked_acquire_seconds_bucket[$__rate_interval])))`},
		{where: "label", expr: `sum by (status) (poolkit_pool_connections{pool=~"$pool"})`},
		{where: "variable", expr: `poolkit_pool_connections`, labelValues: "database"},
	}
	got := strings.Join(dashboardProblems(t, queries, exported), "\n")
	for _, want := range []string{
		"typo: queries poolkit_pool_acquire_total, which the collectors do not export",
		"suffix of a counter: queries poolkit_pool_acquires_total_count, which",
		`label: poolkit_pool_connections has no label "status"`,
		`variable: poolkit_pool_connections has no label "database"`,
		"the dashboard shows no poolkit_bytepool_class_buffers",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "histogram:")
	require.NotContains(t, got, "shows no poolkit_pool_blocked_acquire_seconds")
}

// A panel whose series exist only with Options.PerClass says so in its
// title: without it the panel is empty, and an empty panel reads as a
// pool holding nothing. The metrics that need PerClass are those a bytes
// collector exports with it and not without.
func TestDashboardPanelOfPerClassSeriesSaysItNeedsPerClass(t *testing.T) {
	var optional []string
	synctest.Test(t, func(t *testing.T) {
		b := pooltest.DriveBytes(t)
		families := func(o poolprom.Options) map[string]bool {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(poolprom.NewBytesCollector(b, o))
			fs, err := reg.Gather()
			require.NoError(t, err)
			names := map[string]bool{}
			for _, f := range fs {
				names[f.GetName()] = true
			}
			return names
		}
		without := families(poolprom.Options{})
		for name := range families(poolprom.Options{PerClass: true}) {
			if !without[name] {
				optional = append(optional, name)
			}
		}
	})
	require.NotEmpty(t, optional, "PerClass adds series")

	data, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(data, &d))
	shown := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range optional {
				if strings.Contains(tg.Expr, name) {
					shown++
					require.Contains(t, p.Title, "PerClass", "panel %q shows %s", p.Title, name)
				}
			}
		}
	}
	require.Positive(t, shown, "the dashboard shows the per-class series")
}

// exportedFamilies gathers a registry with both collectors on real pools
// (the pool labelled pool="db", as the dashboard expects), PerClass on. The
// pool's known state is driven in a synctest bubble, as pooltest requires.
func exportedFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	exported := map[string]*dto.MetricFamily{}
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		p := pooltest.DrivePool(t, func(*pool.Pool[int]) {})
		reg.MustRegister(poolprom.NewPoolCollector(p, poolprom.Options{ConstLabels: prometheus.Labels{"pool": "db"}}))
		reg.MustRegister(poolprom.NewBytesCollector(pooltest.DriveBytes(t), poolprom.Options{PerClass: true}))
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			exported[f.GetName()] = f
		}
	})
	return exported
}

// dashboardProblems returns what is wrong with queries, the whole of a
// dashboard: a metric not exported, a label not on it, and an exported
// metric no query shows.
func dashboardProblems(t *testing.T, queries []query, exported map[string]*dto.MetricFamily) []string {
	var problems []string
	shown := map[string]bool{}
	for _, q := range queries {
		for _, u := range usesOf(t, q) {
			family, ok := familyOf(u.metric, exported)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: queries %s, which the collectors do not export", q.where, u.metric))
				continue
			}
			shown[family] = true
			labels := labelsOf(exported[family])
			for _, l := range u.labels {
				if !labels[l] {
					problems = append(problems, fmt.Sprintf("%s: %s has no label %q (it has %v)", q.where, u.metric, l, slices.Sorted(maps.Keys(labels))))
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		if !shown[name] {
			problems = append(problems, "the dashboard shows no "+name)
		}
	}
	return problems
}

// query is one PromQL expression of the dashboard, and where it is.
type query struct {
	where, expr string
	labelValues string // for a label_values(selector, label) variable: the label
}

// dashboardQueries returns the PromQL of every panel target (at any depth:
// rows hold panels) and of every query variable of the dashboard's file.
func dashboardQueries(t *testing.T, file string) []query {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type string
				Query      json.RawMessage
			}
		}
	}
	require.NoError(t, json.Unmarshal(data, &d), "%s is not JSON", file)

	var out []query
	type panel struct {
		Title   string
		Panels  []json.RawMessage
		Targets []struct{ Expr, RefID string }
	}
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			require.NoError(t, json.Unmarshal(r, &p))
			for _, tg := range p.Targets {
				out = append(out, query{where: fmt.Sprintf("panel %q, target %s", p.Title, tg.RefID), expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)

	labelValues := regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			require.NoError(t, json.Unmarshal(v.Query, &q.Query), "variable %s: query neither an object nor a string", v.Name)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		require.NotNil(t, m, "variable %s: %q is not label_values(selector, label)", v.Name, q.Query)
		out = append(out, query{where: "variable " + v.Name, expr: m[1], labelValues: m[2]})
	}
	return out
}

// use is a metric a query selects, with the labels the query reads on it.
type use struct {
	metric string
	labels []string
}

// promqlFuncs are the PromQL functions and aggregations the dashboard may
// use: the parser reads MetricsQL, a superset, and this keeps the
// dashboard to what Prometheus runs.
var promqlFuncs = map[string]bool{
	"rate": true, "irate": true, "increase": true, "histogram_quantile": true,
	"sum": true, "max": true, "min": true, "avg": true, "count": true, "topk": true,
}

// grafanaVars are Grafana's built-in variables that stand where PromQL
// wants a duration; the dashboard's own variables appear only inside label
// matchers' strings.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// usesOf parses q and returns every metric it selects, with the labels it
// matches on each and the labels of every "by" clause above it (and the
// variable's label, for label_values).
func usesOf(t *testing.T, q query) []use {
	t.Helper()
	expr, err := metricsql.Parse(grafanaVars.Replace(q.expr))
	require.NoError(t, err, "%s: %s", q.where, q.expr)
	var uses []use
	var visit func(e metricsql.Expr, by []string)
	visit = func(e metricsql.Expr, by []string) {
		switch e := e.(type) {
		case *metricsql.MetricExpr:
			for _, group := range e.LabelFilterss {
				u := use{labels: slices.Clone(by)}
				for _, f := range group {
					if f.Label == "__name__" {
						u.metric = f.Value
					} else {
						u.labels = append(u.labels, f.Label)
					}
				}
				require.NotEmpty(t, u.metric, "%s: a selector without a metric name", q.where)
				uses = append(uses, u)
			}
		case *metricsql.AggrFuncExpr:
			require.True(t, promqlFuncs[e.Name], "%s: %s is not a PromQL aggregation this dashboard uses", q.where, e.Name)
			require.Contains(t, []string{"", "by"}, e.Modifier.Op, "%s: aggregate with by (...) only", q.where)
			for _, a := range e.Args {
				visit(a, append(slices.Clone(by), e.Modifier.Args...))
			}
		case *metricsql.FuncExpr:
			require.True(t, promqlFuncs[e.Name], "%s: %s is not a PromQL function this dashboard uses", q.where, e.Name)
			for _, a := range e.Args {
				visit(a, by)
			}
		case *metricsql.RollupExpr:
			visit(e.Expr, by)
		case *metricsql.BinaryOpExpr:
			visit(e.Left, by)
			visit(e.Right, by)
		case *metricsql.NumberExpr:
		default:
			t.Fatalf("%s: %T in %s", q.where, e, q.expr)
		}
	}
	var by []string
	if q.labelValues != "" {
		by = []string{q.labelValues}
	}
	visit(expr, by)
	return uses
}

// familyOf returns the exported family a queried name belongs to: itself,
// or, for a series of a histogram, the histogram (name_bucket, name_sum,
// name_count).
func familyOf(name string, exported map[string]*dto.MetricFamily) (string, bool) {
	if _, ok := exported[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := exported[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
				return base, true
			}
		}
	}
	return "", false
}

// labelsOf returns the labels a family's series carry once scraped: their
// own, le for a histogram's buckets, and the scrape's instance and job.
func labelsOf(f *dto.MetricFamily) map[string]bool {
	labels := map[string]bool{"instance": true, "job": true}
	if f.GetType() == dto.MetricType_HISTOGRAM {
		labels["le"] = true
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = true
		}
	}
	return labels
}
