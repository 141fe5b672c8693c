package conform

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// shapeSpec is a contract of one schema per case of TestShape.
const shapeSpec = `
openapi: 3.1.0
info: {title: t, version: "1"}
paths: {}
components:
  schemas:
    Thing:
      type: object
      additionalProperties: false
      required: [name, count, at, tags, inner]
      properties:
        name: {type: string}
        count: {type: integer}
        at: {type: string, format: date-time}
        note: {type: string}
        tags: {type: array, items: {type: string}}
        inner: {$ref: "#/components/schemas/Inner"}
        maybe: {oneOf: [{$ref: "#/components/schemas/Inner"}, {type: "null"}]}
    Inner:
      type: object
      additionalProperties: false
      required: [rate]
      properties:
        rate: {type: number}
`

type inner struct {
	Rate float64 `json:"rate"`
}

// thing matches Thing exactly.
type thing struct {
	Name  string    `json:"name"`
	Count int       `json:"count"`
	At    time.Time `json:"at"`
	Note  string    `json:"note,omitempty"`
	Tags  []string  `json:"tags"`
	Inner inner     `json:"inner"`
	Maybe *inner    `json:"maybe,omitempty"`
	skip  int
	Gone  int `json:"-"`
}

// TestShape: Shape passes a Go type that matches its schema and names each
// kind of drift: a field missing from the schema, a property the type
// lacks, a wrong JSON type, a field always written but not required, a
// required field left out when empty, a nil pointer written as null the
// schema refuses, an open schema for a strict request body.
func TestShape(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(shapeSpec))
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["Thing"]
	_ = thing{}.skip
	if errs := Shape(schema, reflect.TypeFor[thing](), Answer); len(errs) > 0 {
		t.Fatalf("a matching type: %v", errs)
	}
	if errs := Shape(schema, reflect.TypeFor[thing](), Request); len(errs) > 0 {
		t.Fatalf("a matching request type: %v", errs)
	}
	cases := []struct {
		name string
		typ  reflect.Type
		dir  Direction
		want string
	}{
		{"a field missing from the schema", reflect.TypeFor[struct {
			thing
			Extra bool `json:"extra"`
		}](), Answer, `field "extra" (bool), missing from the schema`},
		{"a property the type lacks", reflect.TypeFor[struct {
			Name  string    `json:"name"`
			Count int       `json:"count"`
			At    time.Time `json:"at"`
			Tags  []string  `json:"tags"`
			Inner inner     `json:"inner"`
		}](), Answer, `property "maybe"`},
		{"a wrong type", reflect.TypeFor[struct {
			thing
			Count string `json:"count"`
		}](), Answer, `the schema is [integer]; Go string is a JSON string`},
		{"a nested wrong type", reflect.TypeFor[struct {
			thing
			Inner struct {
				Rate bool `json:"rate"`
			} `json:"inner"`
		}](), Answer, `$.inner.rate: the schema is [number]`},
		{"always written, not required", reflect.TypeFor[struct {
			thing
			Note string `json:"note"`
		}](), Answer, `always writes "note"`},
		{"required, left out when empty", reflect.TypeFor[struct {
			thing
			Name string `json:"name,omitempty"`
		}](), Answer, `requires "name"`},
		{"a nil pointer the schema refuses", reflect.TypeFor[struct {
			thing
			Inner *inner `json:"inner"`
		}](), Answer, `written as null when nil`},
	}
	for _, tc := range cases {
		errs := strings.Join(Shape(schema, tc.typ, tc.dir), "\n")
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%s: Shape = %q, want it to say %q", tc.name, errs, tc.want)
		}
	}
	open := doc.Components.Schemas["Inner"]
	open.Value.AdditionalProperties.Has = nil
	if errs := strings.Join(Shape(open, reflect.TypeFor[inner](), Request), "\n"); !strings.Contains(errs, "additionalProperties: false") {
		t.Errorf("an open schema of a strict request body: Shape = %q", errs)
	}
}

// TestShapePromotion: a field of a struct hides an embedded struct's
// field of the same JSON name, wherever it is declared.
func TestShapePromotion(t *testing.T) {
	type outer struct {
		Count string `json:"count"`
		thing
	}
	if got := jsonFields(reflect.TypeFor[outer]())["count"].typ; got != reflect.TypeFor[string]() {
		t.Errorf("count is %v, want the outer string", got)
	}
}
