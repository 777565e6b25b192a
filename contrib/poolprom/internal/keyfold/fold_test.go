package keyfold

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// The fold keeps every figure of pool.Stats but MaxSize: addGauges and
// counts (countsOf, setIn) carry each one, to its own place, so that a
// figure added to pool.Stats cannot be left out of the fold unnoticed.
func TestFoldKeepsEveryFigure(t *testing.T) {
	var s pool.Stats
	v := reflect.ValueOf(&s).Elem()
	n := uint64(0)
	for i := range v.NumField() {
		f := v.Field(i)
		elems := []reflect.Value{f}
		if f.Kind() == reflect.Array {
			elems = elems[:0]
			for j := range f.Len() {
				elems = append(elems, f.Index(j))
			}
		}
		for _, e := range elems {
			n++ // a value of its own for every figure
			switch e.Kind() {
			case reflect.Int, reflect.Int64:
				e.SetInt(int64(n))
			case reflect.Uint64:
				e.SetUint(n)
			default:
				t.Fatalf("%s: a figure of kind %v", v.Type().Field(i).Name, e.Kind())
			}
		}
	}
	var got pool.Stats
	addGauges(&got, &s)
	c := countsOf(&s)
	c.setIn(&got)
	got.MaxSize = s.MaxSize
	require.Equal(t, s, got)
}
