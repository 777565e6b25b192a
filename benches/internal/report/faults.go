package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// faultTitles names the faults, in the order the page gives them.
var faultTitles = []struct{ fault, title, how string }{
	{"kill", "Every connection killed",
		"Every client connection is ended by the server at once: `pg_terminate_backend` of every backend of the clients, `CLIENT KILL TYPE normal`."},
	{"restart", "A server restart",
		"The server stops (PostgreSQL's fast shutdown, Redis's SHUTDOWN NOSAVE) and starts again on the same port; the fault ends when it answers again."},
	{"partition", "A network partition",
		"The proxy in front of the server stops passing bytes both ways, and passes no new connection on, without closing anything; then it heals and delivers what it held, as TCP's retransmissions would."},
	{"sigstop", "The server frozen",
		"SIGSTOP to every process of the server, then SIGCONT: connections stay open and nothing answers."},
	{"latency", "Added latency",
		"Every reply of the server is delayed (toxiproxy's latency toxic in front of it), then the delay is removed."},
}

// faultTitle is the title of fault, or fault itself.
func faultTitle(fault string) string {
	for _, t := range faultTitles {
		if t.fault == fault {
			return t.title
		}
	}
	return fault
}

// faultContenders returns the contenders of fs in order of first
// appearance.
func faultContenders(fs results.Faults) []string {
	var out []string
	for _, r := range fs.Results {
		if !slices.Contains(out, r.Contender) {
			out = append(out, r.Contender)
		}
	}
	return out
}

// writeFaultsHeadline writes the faults row of the headline: for each
// contender, the failures that started after a fault had ended, summed over
// the faults, and its slowest recovery.
func writeFaultsHeadline(w io.Writer, fs results.Faults, pages string) {
	cols := faultContenders(fs)
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "\n**Faults.** What each client does through %d server faults (every connection killed, a restart, a %v "+
		"partition, a %v SIGSTOP, %v of added latency) with %d goroutines on a pool of %d and a %v deadline per operation: "+
		"the operations that failed although they started after the fault had ended, summed over the faults, and the "+
		"slowest return to 90%% of the throughput before the fault (medians over %d round%s); fewer and sooner are better. "+
		"[The faults page](%sfaults.md) has every figure.\n",
		len(faultsOf(fs)), time.Duration(fs.Settings.HoldNs), time.Duration(fs.Settings.HoldNs), time.Duration(fs.Settings.LatencyNs),
		fs.Settings.Workers, fs.Settings.MaxSize, time.Duration(fs.Settings.DeadlineNs), fs.Settings.Rounds, plural(fs.Settings.Rounds), pages)
	fmt.Fprintf(w, "\n| workload | %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)+1))
	row := []string{"all faults, PostgreSQL and Redis"}
	var after []float64
	for _, name := range cols {
		var failed, worst float64
		var stuck float64
		for _, r := range fs.Results {
			if r.Contender != name {
				continue
			}
			s := r.Summarize()
			failed += s.FailedAfter.Median
			worst = max(worst, s.Recovery.Median)
			stuck += s.Stuck.Median
		}
		after = append(after, failed)
		back := "back to 90% in " + results.Seconds(worst)
		if math.IsInf(worst, 1) {
			back = "not back to 90% in a round"
		}
		cell := fmt.Sprintf("%s failed after<br>%s", results.Count(failed), back)
		if poolkitFamily(name) {
			cell = "**" + strings.Replace(cell, "<br>", "**<br>**", 1) + "**"
		}
		if stuck > 0 {
			cell += fmt.Sprintf("<br>%s stuck", results.Count(stuck))
		}
		row = append(row, cell)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	fmt.Fprintf(w, "\n%s\n", faultsTally(cols, after))
}

// faultsTally names the contenders with the fewest and the most failures
// after the faults.
func faultsTally(cols []string, after []float64) string {
	lo, hi := slices.Min(after), slices.Max(after)
	var best, worst []string
	for i, n := range cols {
		if after[i] == lo {
			best = append(best, n)
		}
		if after[i] == hi && hi > lo {
			worst = append(worst, n)
		}
	}
	out := fmt.Sprintf("Fewest failures after the faults: %s (%s).", listOf(best), results.Count(lo))
	if len(worst) > 0 {
		out += fmt.Sprintf(" Most: %s (%s).", listOf(worst), results.Count(hi))
	}
	return out
}

// faultsOf returns the faults of fs in the order of faultTitles.
func faultsOf(fs results.Faults) []string {
	var out []string
	for _, t := range faultTitles {
		if slices.ContainsFunc(fs.Results, func(r results.FaultResult) bool { return r.Fault == t.fault }) {
			out = append(out, t.fault)
		}
	}
	return out
}

// faultServers returns the servers of fs in order of first appearance.
func faultServers(fs results.Faults) []string {
	var out []string
	for _, r := range fs.Results {
		if !slices.Contains(out, r.Server) {
			out = append(out, r.Server)
		}
	}
	return out
}

// writeFaultsPage writes the method of the faults phase and a section per
// fault: what it does, a chart per server and the table.
func writeFaultsPage(w io.Writer, fs results.Faults) error {
	writeFaultsMethod(w, fs)
	for _, fault := range faultsOf(fs) {
		for _, t := range faultTitles {
			if t.fault == fault {
				fmt.Fprintf(w, "\n## %s\n\n%s\n", t.title, t.how)
			}
		}
		for _, srv := range faultServers(fs) {
			fmt.Fprintf(w, "\n![%s, %s](%s)\n", faultTitle(fault), srv, faultChartName(fault, srv))
		}
		fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(results.FaultHeader, " | "), strings.Repeat("---|", len(results.FaultHeader)))
		for _, r := range fs.Results {
			if r.Fault == fault {
				fmt.Fprintf(w, "| %s |\n", strings.Join(results.FaultRow(r, true), " | "))
			}
		}
	}
	return nil
}

func writeFaultsMethod(w io.Writer, fs results.Faults) {
	st := fs.Settings
	var servers []string
	for _, s := range fs.Servers {
		servers = append(servers, s.Describe)
	}
	fmt.Fprintf(w, `
## Method

poolbench starts servers of its own for this phase, on ports of their own, and never touches any
other: %s. Every client reaches its server through a proxy of poolbench's, which counts the
connections open through it, and toxiproxy behind that for the added latency.

- **Load.** %d goroutines run operations in a loop on a pool of MaxSize %d, each under a deadline of
  %v (a context): SELECT 1 on PostgreSQL, PING on Redis.
- **The fault** comes at a fixed moment, %v after the load starts; a lasting one lasts %v. The load
  goes on %v after the fault has ended; then no operation starts, and those in flight get %v to end.
- **Contenders.** On PostgreSQL: pgxmanager with its defaults (`+"`pgxmanager.NewPool`"+`, MaxSize %d);
  *pgxmanager checked*, the same with the pool's health checks, a CheckTimeout and an AcquireTimeout;
  pgxpool (MaxConns %d) and database/sql over pgx's stdlib driver (MaxOpenConns and MaxIdleConns %d).
  On Redis: poolkit, a `+"`pool.Pool`"+` of the RESP client of `+"`examples/redis/resp`"+`, and go-redis
  (PoolSize %d, its context deadlines honoured with ContextTimeoutEnabled). Each contender runs once
  per fault and round on a fresh pool, in the same order.
- **Figures**, medians over %d round%s with the range where they differ: the operations started and
  those that failed; *failed after the fault ended*, those of them that started once it was over,
  which a pool that had recovered would not fail; *back to 90%%*, the time from the fault's end until
  the successful operations over %d buckets of %v are back to 90%% of their rate before the fault (the
  first second left out), *never* if they were not by the end; the p99.9 and the maximum latency of
  the operations started from the fault on that returned, failed ones included (a dash where none
  returned); the most connections open to the server at once, counted at the proxy; and the
  operations still running when the grace period ended (*stuck*), which no latency figure includes.
  The proxy learns of a client's close only when its reader next runs, so when clients close and
  dial again at once, as pools do after a fault, it holds connections to the server that the
  clients have already closed: 8 clients each holding at most one connection reach 14 or 15 in
  `+"`BenchmarkHoldProxyCountOfChurningClients`"+` (benches/internal/faults) on this machine. A count
  above MaxSize is the server's view through the proxy, not a count of the pool's sockets.
  The charts give the successful operations per second, bucket by bucket, of the first round, with
  the fault shaded.
`, listOf(servers), st.Workers, st.MaxSize, time.Duration(st.DeadlineNs), time.Duration(st.BeforeNs),
		time.Duration(st.HoldNs), time.Duration(st.AfterNs), time.Duration(st.GraceNs), st.MaxSize, st.MaxSize,
		st.MaxSize, st.MaxSize, st.Rounds, plural(st.Rounds), results.RecoveryWindow, time.Duration(st.BucketNs))
}

// faultChartName is the file name of the chart of fault on server.
func faultChartName(fault, server string) string {
	return "faults-" + Slug(fault) + "-" + Slug(server) + ".svg"
}

// lineColors are the colours of the timelines: poolkit's family blue, the
// others in turn.
var lineColors = []color.Color{
	color.RGBA{R: 0xe0, G: 0x8a, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// faultCharts draws, for each fault and server, the throughput of every
// contender's first round over time.
func faultCharts(fs results.Faults) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, fault := range faultsOf(fs) {
		for _, srv := range faultServers(fs) {
			svg, err := faultChart(fs, fault, srv)
			if err != nil {
				return nil, fmt.Errorf("report: chart of %s on %s: %w", fault, srv, err)
			}
			if svg != nil {
				out[faultChartName(fault, srv)] = svg
			}
		}
	}
	return out, nil
}

// faultChart draws one fault on one server; nil if no contender ran it.
func faultChart(fs results.Faults, fault, server string) ([]byte, error) {
	p := newPlot(fmt.Sprintf("%s: %s", faultTitle(fault), server))
	p.X.Label.Text = "seconds from the start of the load; the fault shaded"
	p.Y.Label.Text = "successful operations/s"
	// Top left, text after the line: a wider fallback font then grows away
	// from the lines, into the headroom above the data.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	bucket := float64(fs.Settings.BucketNs) / 1e9
	var ymax, xmax float64
	dashes := [][]vg.Length{nil, {vg.Points(4), vg.Points(2)}}
	others, ours := 0, 0
	var start, end float64
	for _, r := range fs.Results {
		if r.Fault != fault || r.Server != server || len(r.Rounds) == 0 {
			continue
		}
		k := r.Rounds[0]
		start, end = float64(k.FaultStartNs)/1e9, float64(k.FaultEndNs)/1e9
		pts := make(plotter.XYs, len(k.Throughput))
		for i, n := range k.Throughput {
			pts[i] = plotter.XY{X: float64(i) * bucket, Y: float64(n) / bucket}
			ymax = max(ymax, pts[i].Y)
		}
		xmax = max(xmax, float64(len(k.Throughput))*bucket)
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Width = vg.Points(1.2)
		if poolkitFamily(r.Contender) {
			l.Color, l.Dashes = poolkitColor, dashes[ours%len(dashes)]
			ours++
		} else {
			l.Color = lineColors[others%len(lineColors)]
			others++
		}
		p.Add(l)
		p.Legend.Add(r.Contender, l)
	}
	if ours+others == 0 {
		return nil, nil
	}
	ymax = max(ymax*1.6, 1) // headroom for the legend
	p.Add(shade{x0: start, x1: max(end, start+bucket/2), y: ymax})
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, xmax, 0, ymax
	p.X.Tick.Marker = niceTicks{format: func(x float64) string { return results.Ratio3(x) }}
	p.Y.Tick.Marker = niceTicks{format: results.Rate}
	p.Legend.TextStyle.Font = sans(9)
	return renderSVG(p, chartWidth, 3.2*vg.Inch)
}

// shade greys the span of a fault.
type shade struct{ x0, x1, y float64 }

func (s shade) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	poly := []vg.Point{{X: trX(s.x0), Y: trY(0)}, {X: trX(s.x1), Y: trY(0)}, {X: trX(s.x1), Y: trY(s.y)}, {X: trX(s.x0), Y: trY(s.y)}}
	c.FillPolygon(color.RGBA{R: 0, G: 0, B: 0, A: 0x18}, c.ClipPolygonXY(poly))
}
