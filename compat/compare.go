package compat

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Compare checks got against Redis's reply ref under a step's directives.
// Without directives the two must be byte-identical. It returns nil when they
// match, else why not.
func Compare(ref, got []byte, norms []Norm) error {
	if len(norms) == 0 {
		if bytes.Equal(ref, got) {
			return nil
		}
		return errDiffer
	}
	r, err := Parse(ref)
	if err != nil {
		return fmt.Errorf("redis reply: %w", err)
	}
	g, err := Parse(got)
	if err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	return CompareParsed(r, g, norms)
}

var errDiffer = fmt.Errorf("replies differ")

// CompareParsed is Compare on parsed replies; it may reorder their elements.
func CompareParsed(r, g *Reply, norms []Norm) error {
	if r.IsError() || g.IsError() {
		// Directives describe a successful reply: an error is always
		// compared exactly.
		if !bytes.Equal(r.Encode(), g.Encode()) {
			return errDiffer
		}
		return nil
	}
	pairwise := false
	for _, n := range norms {
		switch n.Op {
		case "sort":
			path := ""
			if len(n.Args) == 1 {
				path = string(n.Args[0])
			}
			sortReply(r.At(path))
			sortReply(g.At(path))
		case "approx":
			tol, _ := strconv.ParseFloat(string(n.Args[0]), 64)
			if err := approxEqual(r, g, tol); err != nil {
				return err
			}
			pairwise = true
		case "only":
			for _, p := range n.Args {
				rs, gs := r.At(string(p)), g.At(string(p))
				if rs == nil {
					return fmt.Errorf("redis's reply has no element %s: fix the case", p)
				}
				if gs == nil {
					return fmt.Errorf("no element %s", p)
				}
				if !bytes.Equal(rs.Encode(), gs.Encode()) {
					return fmt.Errorf("element %s differs: %s, Redis has %s", p, gs, rs)
				}
			}
			pairwise = true
		case "shape":
			if err := sameShape(r, g); err != nil {
				return err
			}
			pairwise = true
		case "fields":
			if err := sameFields(r, g, n.Args); err != nil {
				return err
			}
			pairwise = true
		case "oneof":
			for _, rep := range []*Reply{r, g} {
				if err := oneOf(rep, n.Args); err != nil {
					return err
				}
			}
			if r.Kind != g.Kind || r.IsNull() != g.IsNull() {
				return fmt.Errorf("reply types differ")
			}
			pairwise = true
		case "subset":
			for _, rep := range []*Reply{r, g} {
				if err := subsetOf(rep, n.Args); err != nil {
					return err
				}
			}
			if r.Kind != g.Kind || len(r.Elems) != len(g.Elems) || r.IsNull() != g.IsNull() {
				return fmt.Errorf("reply types or lengths differ")
			}
			pairwise = true
		case "scan":
			// The runner has already replaced each reply with the union of
			// every page: compare those exactly.
		}
	}
	if pairwise {
		return nil
	}
	if !bytes.Equal(r.Encode(), g.Encode()) {
		return errDiffer
	}
	return nil
}

// At returns the element at a dot-separated path of 0-based indexes ("" is
// the reply itself), nil if there is none.
func (rep *Reply) At(path string) *Reply {
	if path == "" {
		return rep
	}
	cur := rep
	for _, part := range strings.Split(path, ".") {
		i, err := strconv.Atoi(part)
		if err != nil || cur == nil || !cur.IsAggregate() || i < 0 || i >= len(cur.Elems) {
			return nil
		}
		cur = cur.Elems[i]
	}
	return cur
}

func sortReply(rep *Reply) {
	if rep == nil || !rep.IsAggregate() {
		return
	}
	if rep.Kind == '%' {
		// Sort a map by key, keeping each value with its key.
		type kv struct{ k, v *Reply }
		pairs := make([]kv, len(rep.Elems)/2)
		for i := range pairs {
			pairs[i] = kv{rep.Elems[2*i], rep.Elems[2*i+1]}
		}
		sort.SliceStable(pairs, func(i, j int) bool {
			return bytes.Compare(pairs[i].k.Encode(), pairs[j].k.Encode()) < 0
		})
		for i, p := range pairs {
			rep.Elems[2*i], rep.Elems[2*i+1] = p.k, p.v
		}
		return
	}
	sort.SliceStable(rep.Elems, func(i, j int) bool {
		return bytes.Compare(rep.Elems[i].Encode(), rep.Elems[j].Encode()) < 0
	})
}

func approxEqual(r, g *Reply, tol float64) error {
	if r.Kind != g.Kind || r.IsNull() != g.IsNull() || len(r.Elems) != len(g.Elems) {
		return fmt.Errorf("reply types or lengths differ")
	}
	for i := range r.Elems {
		if err := approxEqual(r.Elems[i], g.Elems[i], tol); err != nil {
			return err
		}
	}
	if r.IsAggregate() || bytes.Equal(r.Str, g.Str) {
		return nil
	}
	a, errA := strconv.ParseFloat(string(r.Str), 64)
	b, errB := strconv.ParseFloat(string(g.Str), 64)
	if errA != nil || errB != nil {
		return fmt.Errorf("values differ and are not numbers")
	}
	// Redis's negative sentinels (-1 no expiry, -2 no key) are exact.
	if a < 0 || b < 0 {
		return fmt.Errorf("sentinel values differ")
	}
	if math.Abs(a-b) > tol {
		return fmt.Errorf("%v and %v differ by more than %v", a, b, tol)
	}
	return nil
}

func sameShape(r, g *Reply) error {
	if r.Kind != g.Kind || r.IsNull() != g.IsNull() || len(r.Elems) != len(g.Elems) {
		return fmt.Errorf("shapes differ")
	}
	for i := range r.Elems {
		if err := sameShape(r.Elems[i], g.Elems[i]); err != nil {
			return err
		}
	}
	return nil
}

// fieldSet is a reply seen as named fields: one record for a map or for
// INFO-style "k:v" text, one record per line for CLIENT LIST-style "k=v k=v".
type fieldSet []map[string]string

func fieldsOf(rep *Reply) (fieldSet, error) {
	if rep.IsAggregate() {
		if len(rep.Elems)%2 != 0 {
			return nil, fmt.Errorf("odd-length aggregate has no fields")
		}
		m := map[string]string{}
		for i := 0; i < len(rep.Elems); i += 2 {
			m[rep.Elems[i].Text()] = string(rep.Elems[i+1].Encode())
		}
		return fieldSet{m}, nil
	}
	switch rep.Kind {
	case '$', '=', '+':
	default:
		return nil, fmt.Errorf("reply %c has no fields", rep.Kind)
	}
	var out fieldSet
	info := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(rep.Text(), "\r\n", "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// INFO lines are "name:value" (the value may hold '=' and ','), CLIENT
		// LIST lines "k=v k=v".
		if name, _, ok := strings.Cut(line, ":"); !ok || strings.ContainsAny(name, "= ") {
			m := map[string]string{}
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				m[k] = v
			}
			out = append(out, m)
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		info[k] = v
	}
	if len(info) > 0 {
		out = append(out, info)
	}
	return out, nil
}

// row keeps the records whose field k is v.
func (fs fieldSet) row(k, v string) fieldSet {
	var out fieldSet
	for _, m := range fs {
		if got, ok := m[k]; ok && got == v {
			out = append(out, m)
		}
	}
	return out
}

func sameFields(r, g *Reply, args [][]byte) error {
	for _, a := range args {
		if at, ok := strings.CutPrefix(string(a), "at="); ok {
			r, g = r.At(at), g.At(at)
			if r == nil || g == nil {
				return fmt.Errorf("no element %s", at)
			}
		}
	}
	if r.Kind != g.Kind {
		return fmt.Errorf("reply types differ (%c, %c)", r.Kind, g.Kind)
	}
	rf, err := fieldsOf(r)
	if err != nil {
		return err
	}
	gf, err := fieldsOf(g)
	if err != nil {
		return err
	}
	for _, a := range args {
		if row, ok := strings.CutPrefix(string(a), "row="); ok {
			// Compare only the record whose field k is v (e.g. the calling
			// client in CLIENT LIST, which may list others too).
			k, v, _ := strings.Cut(row, ":")
			rf, gf = rf.row(k, v), gf.row(k, v)
			if len(rf) != 1 {
				return fmt.Errorf("redis has %d records with %s=%s: fix the case", len(rf), k, v)
			}
		}
	}
	if len(rf) != len(gf) {
		return fmt.Errorf("%d records, Redis has %d", len(gf), len(rf))
	}
	for _, a := range args {
		op, list, _ := strings.Cut(string(a), "=")
		if op == "at" || op == "row" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			for i := range rf {
				rv, rok := rf[i][name]
				gv, gok := gf[i][name]
				if !rok {
					return fmt.Errorf("redis itself lacks field %q: fix the case", name)
				}
				if !gok {
					return fmt.Errorf("field %q missing", name)
				}
				if op == "eq" && rv != gv {
					return fmt.Errorf("field %q is %s, Redis has %s", name, Escape([]byte(gv), 80), Escape([]byte(rv), 80))
				}
			}
		}
	}
	return nil
}

func oneOf(rep *Reply, allowed [][]byte) error {
	for _, a := range allowed {
		if string(a) == "nil" && rep.IsNull() {
			return nil
		}
		if (rep.Kind == '$' || rep.Kind == '+') && !rep.Null && bytes.Equal(rep.Str, a) {
			return nil
		}
	}
	return fmt.Errorf("%s is not one of the allowed replies", rep)
}

func subsetOf(rep *Reply, allowed [][]byte) error {
	distinct := len(allowed) > 0 && string(allowed[0]) == "distinct"
	if distinct {
		allowed = allowed[1:]
	}
	if !rep.IsAggregate() {
		return fmt.Errorf("%s is not an array", rep)
	}
	seen := map[string]bool{}
	for _, e := range rep.Elems {
		if err := oneOf(e, allowed); err != nil {
			return err
		}
		if distinct && seen[string(e.Str)] {
			return fmt.Errorf("%s repeats %s", rep, e)
		}
		seen[string(e.Str)] = true
	}
	return nil
}
