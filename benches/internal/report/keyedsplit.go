package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// splitTitle is the heading of the split cases on the keyed page, and the
// anchor the summary links to.
const (
	splitTitle  = "A static split of the same connections"
	splitAnchor = "a-static-split-of-the-same-connections"
)

// splitWhat is the sentence that says what the split cases measure.
func splitWhat(c results.KeyedSplit) string {
	st := c.Settings
	return fmt.Sprintf("%d goroutines run operations back to back on %d tenant databases of one PostgreSQL with room for "+
		"every contender's connections, each operation's tenant picked by a Zipf law (s = %.2g: the hottest tenant gets "+
		"%.0f%% of the operations, the coldest %.2f%%), one in %d a short transaction; poolkit's keyed pool against the "+
		"static split, the same %d connections as one pool of one connection per tenant",
		st.Workers, st.Tenants, st.ZipfS, 100*st.Share(0), 100*st.Share(st.Tenants-1), st.TxEvery, st.Tenants)
}

// splitCaseTitle names a split case: what its hot set does.
func splitCaseTitle(c results.KeyedSplit) string {
	if c.Settings.ShiftNs > 0 {
		return fmt.Sprintf("Shifting: the tenants' ranks dealt again every %v", time.Duration(c.Settings.ShiftNs))
	}
	if c.Name == "steady" {
		return "Steady: the same hottest tenants throughout"
	}
	return c.Name
}

// writeSplitSection writes the split cases' part of the summary's keyed
// section: what they measure, and a table per case; pages is the way to
// the pages' directory.
func writeSplitSection(w io.Writer, cs []results.KeyedSplit, pages string) {
	if len(cs) == 0 {
		return
	}
	c := cs[0]
	cost := ""
	if c.ConnectNs > 0 {
		cost = fmt.Sprintf(" A new connection costs %s on this server.", results.Nanos(float64(c.ConnectNs)))
	}
	fmt.Fprintf(w, "\n### %s\n\n%s: successful operations per second, and their ratio to the static split's within "+
		"each round, higher is better; the median and p99 of an operation, the errors and those of them the server "+
		"refused a connection for (SQLSTATE 53300), the connections opened per connection handed out (over the run, "+
		"and after its first %v) and the idle connections closed to make room for another tenant's (evictions), fewer "+
		"is better; and the most connections of the contender the server had at once (medians over %d round%s).%s "+
		"[The keyed page](%skeyed.md#%s) has the method.\n",
		splitTitle, splitWhat(c), time.Duration(c.Settings.WarmupNs), c.Settings.Rounds, plural(c.Settings.Rounds), cost, pages, splitAnchor)
	for _, c := range cs {
		fmt.Fprintf(w, "\n**%s.**\n", splitCaseTitle(c))
		writeSplitTable(w, c)
	}
}

// writeSplitTable writes a split case's table, or why it has none.
func writeSplitTable(w io.Writer, c results.KeyedSplit) {
	for _, s := range c.Skipped {
		fmt.Fprintf(w, "\n> **Skipped.** %s.\n", results.ScrubPaths(results.SkipLine(s)))
	}
	if len(c.Results) == 0 {
		if len(c.Skipped) == 0 {
			fmt.Fprintf(w, "\nNo contender ran.\n")
		}
		return
	}
	fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(results.KeyedSplitHeader, " | "), strings.Repeat("---|", len(results.KeyedSplitHeader)))
	for _, r := range c.Results {
		row := results.KeyedSplitRow(c, r)
		if poolkitFamily(r.Contender) {
			row[1] = "**" + row[1] + "**"
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// writeSplitPage writes the split cases' part of the keyed page: their
// method, then each case's table and its contenders' first errors.
func writeSplitPage(w io.Writer, cs []results.KeyedSplit) {
	if len(cs) == 0 {
		return
	}
	c := cs[0]
	st := c.Settings
	server := "a PostgreSQL server"
	if c.Server != "" {
		server = c.Server
	}
	connect := ""
	if c.ConnectNs > 0 {
		connect = fmt.Sprintf(" A new connection with its first query costs %s there (the median of a few made one after the\n  other before the load): every connection a pool opens, or opens again, costs that much.",
			results.Nanos(float64(c.ConnectNs)))
	}
	shift := ""
	for _, x := range cs {
		if x.Settings.ShiftNs > 0 {
			shift = fmt.Sprintf(" In the %s case, every %v from the start of the load the tenants' ranks in the law are dealt\n  again (a random permutation, the same for every contender of a round): the hottest tenants change, and the\n  connections a pool keeps for the old ones no longer serve.",
				x.Name, time.Duration(x.Settings.ShiftNs))
		}
	}
	fmt.Fprintf(w, `
## %s

%s.

### Method

- **The server.** %s, with room for every contender's connections; the tenant databases are the
  case's own, and the operations read no table in them.%s Each contender's connections carry an
  application_name of their own, by which they are counted; no two contenders run at once.
- **Load.** %d goroutines run operations back to back for %v per contender and round, each under a
  deadline of %v (a context) that covers the acquire. Each operation picks its tenant by a Zipf law of
  exponent %.2g over the %d tenants, so that the hottest gets %.1f%% of the operations, the second %.1f%% and
  the coldest %.2f%%; one in %d, at random, is a transaction (`+"`BEGIN`, `SELECT current_database()`, `SELECT 1`, `COMMIT`"+`),
  the others one `+"`SELECT current_database()`"+`, whose answer is checked against the tenant's database. The
  goroutines' sequences are the same for every contender of a round.%s
- **Contenders**, in an order rotated by the round, %d round%s, each on a fresh pool once the previous
  one's connections are gone from the server:
%s- **Figures**, medians over the rounds with the range where they differ: successful operations per
  second, and their ratio to the static split's in the same round (the median of the rounds' ratios);
  the median (p50) and p99 of a successful operation as the caller sees it (acquire, queries,
  release), over every tenant; the operations that failed (*errors*), and those of them the server
  refused a connection for (SQLSTATE 53300); *connects per acquire*, the connections the contender
  tried to open over those it handed out (poolkit's `+"`Stats().Connects`"+` over `+"`Stats().Acquires`"+`, the sums of
  pgxpool's `+"`Stat().NewConnsCount()`"+` over `+"`Stat().AcquireCount()`"+`), over the whole run and after its first
  %v (*after the warm-up*); *evictions*, the idle connections poolkit closed to make room for another
  tenant's (%s; n/a for the static split, which never closes one tenant's connection for another's);
  and the *most backends*, the most connections of the contender the server had at once, counted by
  their application_name in `+"`pg_stat_activity`"+` every %v on a superuser's connection of its own.
- **Alone.** `+"`go run ./benches/cmd/poolbench -mode=keyed -keyed-cases=steady,shifting`"+` runs these cases
  (`+"`-duration`"+` and `+"`-rounds`"+` change their spans, `+"`-keyed-postgres DSN`"+` their server), and
  BenchmarkKeyedTenants (`+"`go test -run '^$' -bench KeyedTenants -benchtime 3x ./benches`"+`, a round an
  iteration) on the server `+"`$POOLKIT_POSTGRES_DSN`"+` names.
`, splitTitle, splitWhat(c), server, connect,
		st.Workers, time.Duration(st.DurationNs), time.Duration(st.DeadlineNs), st.ZipfS, st.Tenants,
		100*st.Share(0), 100*st.Share(min(1, st.Tenants-1)), 100*st.Share(st.Tenants-1), st.TxEvery, shift,
		st.Rounds, plural(st.Rounds), splitContenders(c), time.Duration(st.WarmupNs), evictionReasons(cs), time.Duration(st.PollNs))
	for _, c := range cs {
		fmt.Fprintf(w, "\n### %s\n", splitCaseTitle(c))
		writeSplitTable(w, c)
		writeSplitErrors(w, c)
	}
}

// splitContenders lists a split case's contenders and their set-up, a
// line each.
func splitContenders(c results.KeyedSplit) string {
	var b strings.Builder
	for _, r := range c.Results {
		fmt.Fprintf(&b, "  - *%s*: %s.\n", r.Contender, r.Setup)
	}
	return b.String()
}

// evictionReasons names the close reasons the split cases counted as
// evictions: `Stats().ClosedBy[pool.CloseEvict]`, and the others where
// there are several.
func evictionReasons(cs []results.KeyedSplit) string {
	names := map[string]bool{}
	for _, c := range cs {
		for _, r := range c.Results {
			for _, k := range r.Rounds {
				for name := range k.Evictions {
					names[name] = true
				}
			}
		}
	}
	if len(names) == 0 {
		return "`Stats().ClosedBy` of the reasons whose constants start with `CloseEvict`"
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		out = append(out, "`Stats().ClosedBy[pool."+name+"]`")
	}
	return listOf(out) + ", summed"
}

// writeSplitErrors writes the first error of each contender of c that had
// one.
func writeSplitErrors(w io.Writer, c results.KeyedSplit) {
	var firsts []firstErrors
	for _, r := range c.Results {
		s := c.Summarize(r)
		firsts = append(firsts, firstErrors{r.Contender, s.FirstError, s.FirstOther})
	}
	writeFirstErrors(w, firsts)
}

// firstErrors are a contender's first error and its first of another kind.
type firstErrors struct{ contender, first, other string }

// writeFirstErrors writes the first error of each contender that had one,
// and its first of another kind.
func writeFirstErrors(w io.Writer, firsts []firstErrors) {
	code := func(e string) string { return "`" + strings.ReplaceAll(results.ScrubPaths(e), "`", "'") + "`" }
	var errs []string
	for _, f := range firsts {
		if f.first != "" {
			line := fmt.Sprintf("- %s: %s", f.contender, code(f.first))
			if f.other != "" && f.other != f.first {
				line += "; the first of another kind: " + code(f.other)
			}
			errs = append(errs, line)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\nThe first error of each contender that had one:\n\n%s\n", strings.Join(errs, "\n"))
	}
}
