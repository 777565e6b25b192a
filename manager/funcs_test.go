package manager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
)

func TestFuncsZeroValueConnectFailsNamingTheField(t *testing.T) {
	var m manager.Manager[*int] = manager.Funcs[*int]{}
	obj, err := m.Connect(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "Funcs.ConnectFunc is nil")
	require.Nil(t, obj)
}

func TestFuncsNilRecycleFuncMeansAlwaysReusable(t *testing.T) {
	m := manager.Funcs[int]{}
	require.NoError(t, m.Recycle(context.Background(), 1, manager.Metrics{Uses: 1 << 40}))
}

func TestFuncsNilCloseFuncIsANoOp(t *testing.T) {
	m := manager.Funcs[int]{}
	require.NoError(t, m.Close(1))
}

func TestFuncsPassesArgumentsAndResultsThrough(t *testing.T) {
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	metrics := manager.Metrics{Created: time.Unix(1, 0), LastUsed: time.Unix(2, 0), Uses: 3}
	errRecycle := errors.New("recycle failed")
	errClose := errors.New("close failed")
	var closed []int
	m := manager.Funcs[int]{
		ConnectFunc: func(got context.Context) (int, error) {
			require.Equal(t, "v", got.Value(ctxKey{}))
			return 42, nil
		},
		RecycleFunc: func(got context.Context, obj int, m manager.Metrics) error {
			require.Equal(t, "v", got.Value(ctxKey{}))
			require.Equal(t, 42, obj)
			require.Equal(t, metrics, m)
			return errRecycle
		},
		CloseFunc: func(obj int) error {
			closed = append(closed, obj)
			return errClose
		},
	}

	obj, err := m.Connect(ctx)
	require.NoError(t, err)
	require.Equal(t, 42, obj)
	require.ErrorIs(t, m.Recycle(ctx, obj, metrics), errRecycle)
	require.ErrorIs(t, m.Close(obj), errClose)
	require.Equal(t, []int{42}, closed)
}

func TestFuncsConnectErrorIsReturnedAsIs(t *testing.T) {
	errDial := errors.New("dial failed")
	m := manager.Funcs[string]{ConnectFunc: func(context.Context) (string, error) { return "", errDial }}
	_, err := m.Connect(context.Background())
	require.ErrorIs(t, err, errDial)
}

func TestFuncsPointerAlsoImplementsManager(t *testing.T) {
	var m manager.Manager[int] = &manager.Funcs[int]{
		ConnectFunc: func(context.Context) (int, error) { return 7, nil },
	}
	obj, err := m.Connect(context.Background())
	require.NoError(t, err)
	require.Equal(t, 7, obj)
}

func TestKeyedFuncsPassTheKeyAndMeanWhatFuncsMean(t *testing.T) {
	var got string
	f := manager.KeyedFuncs[string, int]{ConnectFunc: func(_ context.Context, key string) (int, error) {
		got = key
		return len(key), nil
	}}
	v, err := f.Connect(context.Background(), "tenant-7")
	require.NoError(t, err)
	require.Equal(t, 8, v)
	require.Equal(t, "tenant-7", got)
	require.NoError(t, f.Recycle(context.Background(), v, manager.Metrics{}))
	require.NoError(t, f.Close(v))
	_, err = manager.KeyedFuncs[string, int]{}.Connect(context.Background(), "k")
	require.ErrorContains(t, err, "KeyedFuncs.ConnectFunc")
}
