package exchange_test

import (
	"fmt"

	"github.com/poolkit/poolkit/exchange"
)

func ExampleNewRing() {
	x := exchange.NewRing[string](3) // rounded up to 4
	fmt.Println("cap:", x.Cap())
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		fmt.Println("park", s, x.Park(s))
	}
	for {
		s, ok := x.Unpark()
		if !ok {
			break
		}
		fmt.Println("unpark", s)
	}
	// Output:
	// cap: 4
	// park a true
	// park b true
	// park c true
	// park d true
	// park e false
	// unpark a
	// unpark b
	// unpark c
	// unpark d
}

func ExampleNone() {
	var x exchange.Exchange[int] = exchange.None[int]{}
	fmt.Println(x.Park(1), x.Len(), x.Cap())
	_, ok := x.Unpark()
	fmt.Println(ok)
	// Output:
	// false 0 0
	// false
}
