package controller

import (
	"slices"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

func TestListedClusters(t *testing.T) {
	st := func(name string, ready bool) v1alpha1.ClusterStatus {
		return v1alpha1.ClusterStatus{Name: name, Ready: ready}
	}
	all := []v1alpha1.ClusterStatus{st("a", true), st("b", false), st("c", true), st("d", false), st("e", true)}
	view := func(cs []v1alpha1.ClusterStatus) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	tests := []struct {
		max     int
		want    []string
		omitted int32
	}{
		{max: 5, want: []string{"a", "b", "c", "d", "e"}},
		{max: 3, want: []string{"a", "b", "d"}, omitted: 2},
		{max: 2, want: []string{"b", "d"}, omitted: 3},
		{max: 1, want: []string{"b"}, omitted: 4},
	}
	for _, tt := range tests {
		got, omitted := listedClusters(all, tt.max)
		if !slices.Equal(view(got), tt.want) || omitted != tt.omitted {
			t.Errorf("max %d: %v omitted %d, want %v omitted %d", tt.max, view(got), omitted, tt.want, tt.omitted)
		}
	}
}
