package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// keyedQuery is the query of the keyed case as the page shows it; the
// sleep is the settings'.
func keyedQuery(st results.KeyedSettings) string {
	return fmt.Sprintf("SELECT current_database(), v FROM item, pg_sleep(%g) WHERE id = 1", time.Duration(st.SleepNs).Seconds())
}

// keyedWhat is the sentence that says what the keyed case measures.
func keyedWhat(k results.Keyed) string {
	st := k.Settings
	return fmt.Sprintf("%d goroutines run queries back to back on %d tenant databases of one PostgreSQL that allows "+
		"the clients %d connections, each query's tenant picked by a Zipf law (s = %.2g: the first tenant gets %.0f%% of "+
		"the queries, the last %.2f%%)", st.Workers, st.Tenants, st.ClientSlots(), st.ZipfS,
		100*st.Share(0), 100*st.Share(st.Tenants-1))
}

// writeKeyedSection writes the keyed case's section of the summary (not of
// the README's headline): per contender the queries per second, the
// failures and those refused with 53300, and the most connections the
// server saw, in one row; pages is the way to the pages' directory.
func writeKeyedSection(w io.Writer, k results.Keyed, pages string) {
	if k.Crowded() && len(k.Results) > 0 {
		writeCrowdedSection(w, k, pages)
	}
	writeSplitSection(w, k.Splits, pages)
}

// writeCrowdedSection writes the crowded case's part of the keyed section.
func writeCrowdedSection(w io.Writer, k results.Keyed, pages string) {
	st := k.Settings
	cost := ""
	if k.ConnectNs > 0 {
		cost = fmt.Sprintf(" (a new connection costs %s on this server)", results.Nanos(float64(k.ConnectNs)))
	}
	fmt.Fprintf(w, "\n%s: successful queries per second, higher is better; the queries that failed and "+
		"those of them the server refused a connection for (SQLSTATE 53300, too many clients), and the tenants "+
		"whose every query failed, fewer is better; the connections each tried to open%s; and the most "+
		"connections the server saw (medians over %d round%s). [The keyed page](%skeyed.md) has the "+
		"tenants' tail latencies.\n", keyedWhat(k), cost, st.Rounds, plural(st.Rounds), pages)
	var cols []string
	for _, r := range k.Results {
		cols = append(cols, r.Contender)
	}
	fmt.Fprintf(w, "\n| workload | %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)+1))
	row := []string{fmt.Sprintf("%d tenants, %d connections (%d goroutines)", st.Tenants, st.ClientSlots(), st.Workers)}
	var failed []float64
	for _, r := range k.Results {
		s := r.Summarize()
		rate := results.Rate(s.QueriesPerSec.Median) + " queries/s"
		if poolkitFamily(r.Contender) {
			rate = "**" + rate + "**"
		}
		fail := results.Count(s.Failed.Median) + " failed"
		if s.TooMany.Median > 0 {
			fail += fmt.Sprintf(" (%s with 53300)", results.Count(s.TooMany.Median))
		}
		lines := []string{rate, fail}
		if s.TenantsStarved.Median > 0 {
			lines = append(lines, results.Count(s.TenantsStarved.Median)+" tenants starved")
		}
		lines = append(lines, results.Count(s.Connects.Median)+" connects",
			results.Count(s.MaxServerConns.Median)+" server connections at most")
		row = append(row, strings.Join(lines, "<br>"))
		failed = append(failed, s.Failed.Median)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	fmt.Fprintf(w, "\n%s\n", keyedTally(cols, failed))
}

// keyedTally names the contenders with the fewest and the most failed
// queries.
func keyedTally(cols []string, failed []float64) string {
	lo, hi := slices.Min(failed), slices.Max(failed)
	var best, worst []string
	for i, n := range cols {
		if failed[i] == lo {
			best = append(best, n)
		}
		if failed[i] == hi && hi > lo {
			worst = append(worst, n)
		}
	}
	out := fmt.Sprintf("Fewest failed queries: %s (%s).", listOf(best), results.Count(lo))
	if len(worst) > 0 {
		out += fmt.Sprintf(" Most: %s (%s).", listOf(worst), results.Count(hi))
	}
	return out
}

// writeKeyedPage writes the keyed page: the crowded case's method, table
// and the contenders' first errors where the run had it, then the split
// cases'.
func writeKeyedPage(w io.Writer, k results.Keyed) error {
	if k.Crowded() {
		if err := writeCrowdedPage(w, k); err != nil {
			return err
		}
	}
	writeSplitPage(w, k.Splits)
	return nil
}

// writeCrowdedPage writes the method of the crowded case, its table and
// the contenders' first errors.
func writeCrowdedPage(w io.Writer, k results.Keyed) error {
	st := k.Settings
	for _, s := range k.Skipped {
		fmt.Fprintf(w, "\n> **Skipped.** %s.\n", results.ScrubPaths(results.SkipLine(s)))
	}
	server := "a private PostgreSQL cluster"
	if k.Server != "" {
		server = k.Server
	}
	setup := ""
	if k.SetupNs > 0 {
		setup = fmt.Sprintf(", in %v with the server's start", time.Duration(k.SetupNs).Round(100*time.Millisecond))
	}
	connect := ""
	if k.ConnectNs > 0 {
		connect = fmt.Sprintf("\n  A new connection with its first query costs %s on this server (the median of a few made one\n  after the other before the load): every connection a pool opens, or opens again, costs that much.",
			results.Nanos(float64(k.ConnectNs)))
	}
	sampleNote := ""
	if st.MinSamples < 100 {
		sampleNote = " (below 100, a tenant's p99 is its slowest query)"
	}
	fmt.Fprintf(w, `
%s.

## Method

- **The server.** poolbench starts a server of its own for this case, on a port of its own, and never
  touches any other: %s,
  with max_connections %d and superuser_reserved_connections %d. It makes %d tenant databases,
  tenant_000 to tenant_%03d, copies of one template holding a table of one row%s.
  The clients connect as a role that is not a superuser, so they get %d of the %d connections: the
  reserved ones stay free, and one goes to the connection that counts the server's (below).%s
- **Load.** %d goroutines run queries back to back for %v per contender and round, each under a
  deadline of %v (a context) that covers the acquire. Each query picks its tenant by a Zipf law of
  exponent %.2g, so that tenant_000 gets %.1f%% of the queries, tenant_009 %.1f%% and tenant_%03d %.2f%%;
  the goroutines' tenant sequences are the same for every contender of a round. A query is
  `+"`%s`"+`:
  it holds its connection for the sleep and checks that it ran in its tenant's database.
- **Contenders**, in an order rotated by the round, %d round%s, each on a fresh pool once the
  previous one's connections are gone from the server:
%s- **Figures**, medians over the rounds with the range where they differ: successful queries per
  second; the queries that failed, those of them the server refused a connection for (SQLSTATE
  53300: *sorry, too many clients already*, or *remaining connection slots are reserved*) and those
  that ran out of their deadline; the tenants *starved*, whose queries all failed; the p99 of the
  time to get a connection (*acquire*) and of the whole call as the caller sees it (*query*:
  acquire, query, release), over the successful queries of each tenant with %d or more of them%s:
  the worst tenant's p99, named, and the median of the tenants' p99s; the connections each
  contender tried to open, those refused included (*connects*), and, for poolkit, those it closed idle to
  make room for another tenant's (*evictions*, `+"`Stats().ClosedBy[pool.CloseEvict]`"+`; n/a for a pool
  per tenant, which never closes one tenant's connection for another's); and the most client
  connections the server had at once, counted in `+"`pg_stat_activity`"+` every %v on a superuser's
  connection of its own, which is left out of the count.

## Results
`, keyedWhat(k), server, st.MaxConnections, st.SuperuserReserved, st.Tenants, st.Tenants-1, setup,
		st.ClientSlots(), st.MaxConnections, connect,
		st.Workers, time.Duration(st.DurationNs), time.Duration(st.DeadlineNs), st.ZipfS,
		100*st.Share(0), 100*st.Share(min(9, st.Tenants-1)), st.Tenants-1, 100*st.Share(st.Tenants-1),
		keyedQuery(st), st.Rounds, plural(st.Rounds), keyedContenders(k), st.MinSamples, sampleNote, time.Duration(st.PollNs))
	if len(k.Results) == 0 {
		fmt.Fprintf(w, "\nNo contender ran.\n")
		return nil
	}
	fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(results.KeyedHeader, " | "), strings.Repeat("---|", len(results.KeyedHeader)))
	for _, r := range k.Results {
		fmt.Fprintf(w, "| %s |\n", strings.Join(results.KeyedRow(r), " | "))
	}
	var firsts []firstErrors
	for _, r := range k.Results {
		s := r.Summarize()
		firsts = append(firsts, firstErrors{r.Contender, s.FirstError, s.FirstOther})
	}
	writeFirstErrors(w, firsts)
	if s := keyedMostConns(k); s != "" {
		fmt.Fprintf(w, "\n%s\n", s)
	}
	return nil
}

// keyedContenders lists the contenders and their set-up, a line each.
func keyedContenders(k results.Keyed) string {
	var b strings.Builder
	for _, r := range k.Results {
		fmt.Fprintf(&b, "  - *%s*: %s.\n", r.Contender, r.Setup)
	}
	return b.String()
}

// keyedMostConns says which contenders reached the server's limit.
func keyedMostConns(k results.Keyed) string {
	var at, below []string
	for _, r := range k.Results {
		s := r.Summarize()
		if math.IsNaN(s.MaxServerConns.Max) {
			continue
		}
		if int(s.MaxServerConns.Max) >= k.Settings.ClientSlots() {
			at = append(at, r.Contender)
		} else {
			below = append(below, fmt.Sprintf("%s (%s at most)", r.Contender, results.Count(s.MaxServerConns.Max)))
		}
	}
	var out []string
	if len(at) > 0 {
		out = append(out, fmt.Sprintf("The server reached its %d connections for the clients under %s.", k.Settings.ClientSlots(), listOf(at)))
	}
	if len(below) > 0 {
		out = append(out, fmt.Sprintf("It stayed below them under %s.", listOf(below)))
	}
	return strings.Join(out, " ")
}
