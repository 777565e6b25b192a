package poolprom

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// The fold sums and subtracts every figure of pool.Stats but MaxSize:
// gauges and counters list them all, so that a figure added to pool.Stats
// cannot be left out of the fold unnoticed.
func TestFoldSumsEveryFigure(t *testing.T) {
	var s pool.Stats
	for _, p := range gauges(&s) {
		*p++
	}
	n, d := counters(&s)
	for _, p := range n {
		*p++
	}
	for _, p := range d {
		*p++
	}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		elems := []reflect.Value{f}
		if f.Kind() == reflect.Array {
			elems = elems[:0]
			for j := range f.Len() {
				elems = append(elems, f.Index(j))
			}
		}
		for j, e := range elems {
			if name == "MaxSize" {
				require.True(t, e.IsZero(), "MaxSize is not summed")
			} else {
				require.Equal(t, uint64(1), asUint(t, e), "%s (element %d) is listed once", name, j)
			}
		}
	}
}

func asUint(t *testing.T, v reflect.Value) uint64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return uint64(v.Int())
	case reflect.Uint64:
		return v.Uint()
	}
	t.Fatalf("a figure of kind %v", v.Kind())
	return 0
}
