package pages

import (
	"bytes"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"text/template/parse"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// An operator's page template is Go html/template text: every value it
// prints is escaped for where it lands (HTML, attribute, URL, CSS), and the
// page's CSP runs no inline script whatever it contains. On save it is
// parsed and executed in every state and a right-to-left language, so a
// template that would fail on the live page is refused with its line.
//
// Rules beyond the parser's, so executing one costs little and the page
// keeps working:
//   - one template: no {{define}}, {{block}} or {{template}};
//   - {{range}} nested at most maxRangeDepth deep (the data's lists are
//     small, but ranges multiply);
//   - no <script> of its own: {{.Runtime}} brings the page's script, once;
//   - at most maxPageBytes of output.

// maxRangeDepth bounds nested {{range}} actions.
const maxRangeDepth = 2

// runtimeMarker is in the output of {{.Runtime}}.
const runtimeMarker = `id="ar-page"`

var (
	templateLine = regexp.MustCompile(`page:(\d+)`)
	scriptTag    = regexp.MustCompile(`(?i)<\s*script`)
)

// templateProblem is a 400 for a template, naming its line when known.
func templateProblem(line int, format string, a ...any) *kit.Problem {
	p := kit.BadRequest("template: "+format, a...)
	p.Code = "bad_template"
	p.Type = "https://anteroom.dev/problems/bad_template"
	p.Line = line
	return p
}

// errTemplateProblem turns a parse or execution error into a problem.
func errTemplateProblem(err error) *kit.Problem {
	msg := err.Error()
	line := 0
	if m := templateLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	msg = strings.TrimPrefix(strings.TrimPrefix(msg, "html/template:"), "template: ")
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return templateProblem(line, "%s", msg)
}

// compileTemplate parses an operator's template and checks the rules
// above; errors are *kit.Problem.
func compileTemplate(src string) (*template.Template, error) {
	if loc := scriptTag.FindStringIndex(src); loc != nil {
		return nil, templateProblem(1+strings.Count(src[:loc[0]], "\n"), "a page template may not have a <script> of its own; put {{.Runtime}} at the end of <body>")
	}
	t, err := template.New("page").Parse(src)
	if err != nil {
		return nil, errTemplateProblem(err)
	}
	if len(t.Templates()) > 1 {
		return nil, templateProblem(0, "a page template is one template: no {{define}} or {{block}}")
	}
	if err := checkNodes(t.Tree, t.Tree.Root, 0); err != nil {
		return nil, err
	}
	return t, nil
}

func checkNodes(tree *parse.Tree, n parse.Node, depth int) *kit.Problem {
	line := func(n parse.Node) int { l, _ := tree.ErrorContext(n); return lineOf(l) }
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if p := checkNodes(tree, c, depth); p != nil {
				return p
			}
		}
	case *parse.TemplateNode:
		return templateProblem(line(n), "{{template}} is not allowed in a page template")
	case *parse.RangeNode:
		if depth+1 > maxRangeDepth {
			return templateProblem(line(n), "{{range}} is nested more than %d deep", maxRangeDepth)
		}
		if p := checkNodes(tree, n.List, depth+1); p != nil {
			return p
		}
		return checkNodes(tree, n.ElseList, depth)
	case *parse.IfNode:
		return checkBranch(tree, &n.BranchNode, depth)
	case *parse.WithNode:
		return checkBranch(tree, &n.BranchNode, depth)
	}
	return nil
}

func checkBranch(tree *parse.Tree, b *parse.BranchNode, depth int) *kit.Problem {
	if p := checkNodes(tree, b.List, depth); p != nil {
		return p
	}
	return checkNodes(tree, b.ElseList, depth)
}

// lineOf reads the line of an ErrorContext location "page:3:14".
func lineOf(loc string) int {
	parts := strings.Split(loc, ":")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

// checkPage validates a page staff save: the branding (event.Page.Validate),
// the copy's languages and keys, and the template, executed with the
// sample of every state in English and Arabic.
func (r *pageRenderer) checkPage(cfg *event.Config, p *event.Page, now time.Time) error {
	if err := p.Validate(); err != nil {
		return kit.NewProblem(fiber.StatusBadRequest, "bad_request", strings.TrimPrefix(err.Error(), event.ErrInvalid.Error()+": "))
	}
	for code, msgs := range p.Copy {
		if _, ok := langByCode(code); !ok {
			return kit.BadRequest("page: copy.%s: the languages are %s", code, strings.Join(languageCodes(), ", "))
		}
		for k := range msgs {
			if _, ok := r.catalogs["en"][k]; !ok {
				return kit.BadRequest("page: copy.%s.%s is not a message key (see web/pages/i18n/en.json)", code, k)
			}
		}
	}
	if p.Template == "" {
		return nil
	}
	t, err := compileTemplate(p.Template)
	if err != nil {
		return err
	}
	for _, code := range []string{"en", "ar"} {
		lang, _ := langByCode(code)
		for _, state := range previewStates {
			d := r.preview(cfg, p, lang, state, now)
			out, err := r.execute(t, &d)
			if err != nil {
				if err == errPageTooLarge {
					return templateProblem(0, "the page is larger than %d KB in state %s", maxPageBytes/1024, state)
				}
				return errTemplateProblem(err)
			}
			if bytes.Count(out, []byte(runtimeMarker)) != 1 {
				return templateProblem(0, "put {{.Runtime}} once at the end of <body> (in state %s it appears %d times)", state, bytes.Count(out, []byte(runtimeMarker)))
			}
		}
	}
	return nil
}

// CheckPage judges p as cfg's page at now as the page routes judge a
// draft: its shape, its copy's languages and keys, and its template run
// in every preview state. `anteroom apply` checks every page of a file
// with it before it creates or changes any sale, so a new sale is not
// left with the built-in page by a page the node would refuse.
func CheckPage(cfg *event.Config, p *event.Page, now time.Time) error {
	return newPageRenderer().checkPage(cfg, p, now)
}
