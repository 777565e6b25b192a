package icount

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTotalsReadsTheInstructionsOfACallgrindFile(t *testing.T) {
	ir, err := Totals(strings.NewReader("version: 1\nevents: Ir\nfn=main\n12 3\nsummary: 1465280\ntotals: 1465280\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1465280), ir)

	ir, err = Totals(strings.NewReader("events: Ir Dr\ntotals: 77 12\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(77), ir, "the first event is Ir")

	_, err = Totals(strings.NewReader("events: Ir\n"))
	assert.ErrorContains(t, err, "no summary")
}

func TestOpsHaveUniqueNamesAndGuardPoolkitsHotPaths(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range Ops() {
		assert.False(t, seen[o.Name], "duplicate %s", o.Name)
		seen[o.Name] = true
		assert.True(t, strings.HasPrefix(o.Name, o.Table+"/Impl="+o.Contender), o.Name)
	}
	var g []string
	for _, o := range Guarded() {
		g = append(g, o.Name)
	}
	assert.Equal(t, []string{"Pool/Impl=poolkit", "Pool/Impl=poolkit-recycle", "Pool/Impl=poolkit-keyed", "Pool/Impl=poolkit-keyed-recycle",
		"Bytes/Size=4KiB/Impl=poolkit", "Bytes/Size=64KiB/Impl=poolkit",
		"Bytes/Direct/Size=64KiB/Impl=poolkit", "Bytes/Direct/Size=64KiB/Impl=poolkit-pkg"}, g)
}

// The children run in results.IcountEnv, with the runtime kept off RDTSCP,
// which valgrind cannot decode.
func TestChildEnvKeepsTheRuntimeOffRDTSCP(t *testing.T) {
	assert.Equal(t, []string{"GOMAXPROCS=1", "GOGC=off", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off"}, childEnv())
}

// The child sets up and runs every op and prints the allocations of the
// ops it ran: at most one an op for any of the pools.
func TestRunChildRunsEveryOp(t *testing.T) {
	for _, o := range Ops() {
		var b bytes.Buffer
		require.NoError(t, RunChild(&b, o.Name, 1000), o.Name)
		n, err := strconv.ParseUint(strings.TrimSpace(b.String()), 10, 64)
		require.NoError(t, err, o.Name)
		// At most about one allocation per op, and a few more where the
		// collector (on here, unlike under callgrind) empties a
		// sync.Pool-based pool of 1 MiB buffers: far below the 10,000
		// warm-up ops, which must not be counted.
		assert.Less(t, n, uint64(2000), o.Name)
	}
	assert.ErrorContains(t, RunChild(new(bytes.Buffer), "Pool/Impl=nothing", 1), `no op "Pool/Impl=nothing"`)
}

func TestOnlyAChildKilledByRDTSCPUnderValgrindIsRetried(t *testing.T) {
	sigill := "vex amd64->IR: unhandled instruction bytes: 0xF 0x1 0xF9 0x48\n" +
		"SIGILL: illegal instruction\nPC=0x48e7c9 m=2 sigcode=1\nruntime.cputicks()\n"
	assert.True(t, rdtscpUndecoded(sigill))
	assert.False(t, rdtscpUndecoded("vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 0x7D\nSIGILL: illegal instruction\n"),
		"another instruction valgrind cannot decode fails at once")
	assert.False(t, rdtscpUndecoded("panic: icount: no op named \"x\"\n"))
	assert.False(t, rdtscpUndecoded("SIGSEGV: segmentation violation\n"))
}
