package aggregate

import (
	"cmp"
	"maps"
	"slices"
)

// Admit applies a member's limit on exports to the exports of one member
// and returns them with OverLimit set on the valid ones past it. Only a
// valid export (a Service that can be exported) counts: one without a
// Service, or with an invalid one, keeps its own reason and takes no
// place. Over the limit, the namespaces of the member share it equally:
// in rounds, each namespace's oldest valid export not yet admitted, the
// oldest of a round first, until the limit is reached, so a namespace
// that uses less than its share leaves the rest to the others and no
// namespace crowds out another. The result depends on no input order.
func Admit(exports []Export, limit int) []Export {
	out := slices.Clone(exports)
	byNamespace := map[string][]int{}
	for i := range out {
		out[i].OverLimit = false
		if r, _ := validity(normalize(out[i])); r == ReasonValid {
			byNamespace[out[i].Namespace] = append(byNamespace[out[i].Namespace], i)
		}
	}
	older := func(i, j int) int {
		return cmp.Or(out[i].Since().Compare(out[j].Since()), cmp.Compare(out[i].Namespace, out[j].Namespace),
			cmp.Compare(out[i].Name, out[j].Name))
	}
	queues := make([][]int, 0, len(byNamespace))
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		q := byNamespace[ns]
		slices.SortFunc(q, older)
		queues = append(queues, q)
	}
	admitted := 0
	for round := 0; len(queues) > 0; round++ {
		var candidates []int
		var left [][]int
		for _, q := range queues {
			candidates = append(candidates, q[round])
			if len(q) > round+1 {
				left = append(left, q)
			}
		}
		slices.SortFunc(candidates, older)
		for _, i := range candidates {
			out[i].OverLimit = admitted >= limit
			admitted++
		}
		queues = left
	}
	return out
}

// Valid says whether an export's Service can be exported, its member's
// limit aside: only then are its endpoints worth reading.
func Valid(e Export) bool {
	e.OverLimit = false
	r, _ := validity(normalize(e))
	return r == ReasonValid
}
