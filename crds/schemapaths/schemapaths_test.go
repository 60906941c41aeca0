package schemapaths

import (
	"slices"
	"testing"
)

const crdYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.io
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              mode:
                type: string
                enum: [b, a]
              size:
                x-kubernetes-int-or-string: true
              items:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
              labels:
                type: object
                additionalProperties: {type: string}
              config:
                type: object
                x-kubernetes-preserve-unknown-fields: true
`

func TestFromCRD_FlattensEveryKindOfNode(t *testing.T) {
	fields, err := FromCRD([]byte(crdYAML), "v1")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range fields {
		lines = append(lines, f.String())
	}
	want := []string{
		".spec\tobject",
		".spec.config\tobject\topen",
		".spec.items\tarray",
		".spec.items[]\tobject",
		".spec.items[].name\tstring",
		".spec.labels\tobject",
		".spec.labels{}\tstring",
		".spec.mode\tstring\tenum=a|b",
		".spec.size\tint-or-string",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("got\n%q\nwant\n%q", lines, want)
	}
	for _, l := range lines {
		f, err := Parse(l)
		if err != nil || f.String() != l {
			t.Errorf("Parse(%q) = %v, %v: does not round-trip", l, f, err)
		}
	}
	if _, err := FromCRD([]byte(crdYAML), "v2"); err == nil {
		t.Error("a version the CRD lacks was not refused")
	}
}

func TestMissing_FindsEachKindOfDrift(t *testing.T) {
	parse := func(lines ...string) []Field {
		var out []Field
		for _, l := range lines {
			f, err := Parse(l)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, f)
		}
		return out
	}
	want := parse(".a\tobject", ".a.b\tstring\tenum=x|y", ".a.c\tinteger", ".d\tobject\topen", ".e\tobject", ".e.f\tstring", ".g\tobject\topen", ".g.h\tstring")
	ours := parse(".a\tobject", ".a.b\tstring\tenum=x", ".a.c\tstring", ".d\tobject", ".e\tobject\topen", ".g\tobject\topen")
	got := Missing(want, ours)
	wantDiffs := []string{
		"enum of .a.b: want [x y], have [x]",
		"type of .a.c: want integer, have string",
		".d: want unknown fields kept, ours prunes them",
		"missing .e.f\tstring",
	}
	if !slices.Equal(got, wantDiffs) {
		t.Fatalf("got\n%q\nwant\n%q", got, wantDiffs)
	}
	// .g.h is covered: both keep everything below .g; .e.f is not, as only ours keeps .e open.
	if got := Missing(parse(".x\tobject", ".x.y\tstring"), parse(".x\tobject")); !slices.Equal(got, []string{"missing .x.y\tstring"}) {
		t.Fatalf("a field below a closed object: got %q", got)
	}
}
