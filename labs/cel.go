package labs

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"github.com/gpulab/gpulab/cluster"
	"google.golang.org/protobuf/types/known/structpb"
)

// The three CEL environments: a step's metrics see its parsed output, a
// prerequisite's expect sees the same, and criteria see the lab's metrics.
var (
	stepEnv, criterionEnv *cel.Env
)

func init() {
	opts := append([]cel.EnvOption{cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(), ext.Strings(), ext.Lists(), ext.Math(), ext.Bindings(), sumFunction, countFunction, unmeasuredFunction}, append(statsFunctions, quotaFunctions...)...)
	var err error
	stepEnv, err = cel.NewEnv(append(opts,
		cel.Variable("out", cel.DynType),
		cel.Variable("stdout", cel.StringType),
		cel.Variable("stderr", cel.StringType),
		cel.Variable("exit_code", cel.IntType),
		cel.Variable("samples", cel.ListType(cel.DynType)),
		// checks are the runbooks' verdicts on the step's parsed output,
		// by rule: checks['nvlink-mesh'].status, .summary.
		cel.Variable("checks", cel.MapType(cel.StringType, cel.MapType(cel.StringType, cel.StringType))))...)
	if err != nil {
		panic(err)
	}
	criterionEnv, err = cel.NewEnv(append(opts,
		cel.Variable("metrics", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("params", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("hosts", cel.IntType))...)
	if err != nil {
		panic(err)
	}
}

// sumFunction adds list.sum(): the sum of a list of numbers, an int when
// every element is one, a double otherwise (CEL has no built-in sum).
var sumFunction = cel.Function("sum",
	cel.MemberOverload("list_sum", []*cel.Type{cel.ListType(cel.DynType)}, cel.DynType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			l, ok := v.(traits.Lister)
			if !ok {
				return types.NewErr("sum: not a list")
			}
			var ints int64
			var floats float64
			isFloat := false
			it := l.Iterator()
			for it.HasNext() == types.True {
				switch x := it.Next().(type) {
				case types.Int:
					ints += int64(x)
				case types.Uint:
					ints += int64(x)
				case types.Double:
					floats += float64(x)
					isFloat = true
				default:
					return types.NewErr("sum: %s is not a number", x.Type().TypeName())
				}
			}
			if isFloat {
				return types.Double(floats + float64(ints))
			}
			return types.Int(ints)
		})))

// unmeasuredFunction adds unmeasured(why): no value, with why, for the
// branch of a metric where the output is no evidence ("exit_code == 0 ?
// ... : unmeasured('the pod did not run')"): the metric is then not
// measured and its criteria are UNKNOWN, saying why.
var unmeasuredFunction = cel.Function("unmeasured",
	cel.Overload("unmeasured_string", []*cel.Type{cel.StringType}, cel.DynType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			return types.NewErr("%s", string(v.(types.String)))
		})))

// countFunction adds count(string): a counter as a tool prints it
// ("0", "12"), as an int; anything else ("Unknown Error", "N/A", "[GPU
// requires reset]") is an error naming it, so that a metric over a
// counter the tool could not read is not measured rather than counted 0.
var countFunction = cel.Function("count",
	cel.Overload("count_string", []*cel.Type{cel.StringType}, cel.IntType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			s := strings.TrimSpace(string(v.(types.String)))
			n, err := strconv.ParseUint(s, 10, 63)
			if err != nil {
				return types.NewErr("a counter reads %q, not a count: the tool could not read it", s)
			}
			return types.Int(n)
		})))

// numbers reads a CEL list of numbers as float64s.
func numbers(v ref.Val) ([]float64, ref.Val) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, types.NewErr("not a list")
	}
	var out []float64
	it := l.Iterator()
	for it.HasNext() == types.True {
		switch x := it.Next().(type) {
		case types.Int:
			out = append(out, float64(x))
		case types.Uint:
			out = append(out, float64(x))
		case types.Double:
			out = append(out, float64(x))
		default:
			return nil, types.NewErr("%s is not a number", x.Type().TypeName())
		}
	}
	return out, nil
}

// Percentile is the nearest-rank percentile of samples (p in 0..100): the
// smallest sample with at least p% of the samples at or below it. It is
// the method the records state; it never interpolates between samples.
func Percentile(samples []float64, p float64) (float64, error) {
	if len(samples) == 0 {
		return 0, fmt.Errorf("percentile of no samples")
	}
	if p < 0 || p > 100 {
		return 0, fmt.Errorf("percentile %v is outside 0..100", p)
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1], nil
}

// listAndDouble binds f(list of numbers, double) as a CEL function: an
// element that is no number, or f's error, is the call's error.
func listAndDouble(f func([]float64, float64) (float64, error)) cel.OverloadOpt {
	return cel.BinaryBinding(func(l, d ref.Val) ref.Val {
		xs, bad := numbers(l)
		if bad != nil {
			return bad
		}
		v, err := f(xs, float64(d.(types.Double)))
		if err != nil {
			return types.NewErr("%v", err)
		}
		return types.Double(v)
	})
}

// statsFunctions add percentile(list, p) (nearest rank) and mean(list)
// for metrics computed from samples (dmon rows, per-request latencies).
var statsFunctions = []cel.EnvOption{
	cel.Function("percentile",
		cel.Overload("percentile_list_double", []*cel.Type{cel.ListType(cel.DynType), cel.DoubleType}, cel.DoubleType,
			listAndDouble(Percentile))),
	cel.Function("mean",
		cel.Overload("mean_list", []*cel.Type{cel.ListType(cel.DynType)}, cel.DoubleType,
			cel.UnaryBinding(func(l ref.Val) ref.Val {
				xs, bad := numbers(l)
				if bad != nil {
					return bad
				}
				if len(xs) == 0 {
					return types.NewErr("mean of no samples")
				}
				var sum float64
				for _, x := range xs {
					sum += x
				}
				return types.Double(sum / float64(len(xs)))
			}))),
}

// Fragmentation is the share of free capacity that a request of the given
// size cannot use (cluster.FragmentationRate: the same rate that gpulab
// cluster fragmentation reports for a live cluster).
func Fragmentation(free []float64, request float64) (float64, error) {
	return cluster.FragmentationRate(free, request)
}

// quotaFunctions are the metrics of sharing a GPU pool: fragmentation rate,
// quota fulfilment (what a tenant got ÷ what its quota promised: 1 is
// fulfilled, above 1 is borrowing) and penetration (how far a tenant went
// beyond its limit, 0 when it stayed within).
var quotaFunctions = []cel.EnvOption{
	cel.Function("fragmentation",
		cel.Overload("fragmentation_list_double", []*cel.Type{cel.ListType(cel.DynType), cel.DoubleType}, cel.DoubleType,
			listAndDouble(Fragmentation))),
	cel.Function("fulfilment",
		cel.Overload("fulfilment_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType,
			cel.BinaryBinding(func(got, promised ref.Val) ref.Val {
				if float64(promised.(types.Double)) <= 0 {
					return types.NewErr("fulfilment: the promised quota must be positive, not %v", promised)
				}
				return types.Double(float64(got.(types.Double)) / float64(promised.(types.Double)))
			}))),
	cel.Function("penetration",
		cel.Overload("penetration_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType,
			cel.BinaryBinding(func(used, limit ref.Val) ref.Val {
				return types.Double(max(float64(used.(types.Double))-float64(limit.(types.Double)), 0))
			}))),
}

// program is a compiled expression and the metrics it reads.
type program struct {
	expr   string
	prg    cel.Program
	reads  []string // metrics.NAME
	params []string // params.NAME
	// vars are the environment's variables the expression reads
	// (samples, out, stdout...), from the checked AST.
	vars map[string]bool
	// ast is the checked expression, for lab check to hold the keys it
	// reads to the shapes of out, samples and checks (readShapes).
	ast *celast.AST
	// partial evaluates with some metrics unknown (criteria only): a
	// criterion is decided as soon as the metrics it has decide it.
	partial cel.Program
}

var (
	metricRef = regexp.MustCompile(`\bmetrics\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']+)["']\s*\])`)
	paramRef  = regexp.MustCompile(`\bparams\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']+)["']\s*\])`)
)

// compile checks expr in env; wantBool requires a bool result.
func compile(env *cel.Env, expr string, wantBool bool) (*program, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("CEL: %s", oneLine(iss.Err().Error()))
	}
	if wantBool && ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("CEL: %q gives %s, want a bool", expr, ast.OutputType())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(1_000_000))
	if err != nil {
		return nil, fmt.Errorf("CEL: %v", err)
	}
	p := &program{expr: expr, prg: prg, vars: map[string]bool{}, ast: ast.NativeRep()}
	if wantBool {
		if p.partial, err = env.Program(ast, cel.EvalOptions(cel.OptPartialEval), cel.CostLimit(1_000_000)); err != nil {
			return nil, fmt.Errorf("CEL: %v", err)
		}
	}
	for _, r := range ast.NativeRep().ReferenceMap() {
		if len(r.OverloadIDs) == 0 { // an identifier, not a function
			p.vars[r.Name] = true
		}
	}
	seen := map[string]bool{}
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		name := m[1] + m[2]
		if !seen[name] {
			seen[name] = true
			p.reads = append(p.reads, name)
		}
	}
	sort.Strings(p.reads)
	for _, m := range paramRef.FindAllStringSubmatch(expr, -1) {
		p.params = append(p.params, m[1]+m[2])
	}
	return p, nil
}

func oneLine(s string) string {
	s = strings.TrimPrefix(s, "ERROR: <input>:")
	return strings.Join(strings.Fields(s), " ")
}

// eval runs p over vars and returns a Go value (bool, int64, float64,
// string, lists and maps as JSON would).
func (p *program) eval(vars map[string]any) (any, error) {
	v, _, err := p.prg.Eval(vars)
	if err != nil {
		return nil, err
	}
	return native(v)
}

// decide evaluates p with the metrics in unknown left unknown: the bool
// when the known metrics decide it (false && ?, true || ?), ok false when
// the result depends on an unknown.
func (p *program) decide(vars map[string]any, unknown []string) (result, ok bool) {
	if p.partial == nil {
		return false, false
	}
	patterns := make([]*cel.AttributePatternType, len(unknown))
	for i, m := range unknown {
		patterns[i] = cel.AttributePattern("metrics").QualString(m)
	}
	act, err := cel.PartialVars(vars, patterns...)
	if err != nil {
		return false, false
	}
	v, _, err := p.partial.Eval(act)
	if err != nil || types.IsUnknown(v) {
		return false, false
	}
	b, isBool := v.Value().(bool)
	return b, isBool
}

func native(v ref.Val) (any, error) {
	switch v.Type() {
	case types.NullType:
		return nil, nil
	case types.BoolType, types.IntType, types.UintType, types.DoubleType, types.StringType:
		return v.Value(), nil
	}
	j, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return nil, fmt.Errorf("a %s is not a metric value", v.Type().TypeName())
	}
	return j.(*structpb.Value).AsInterface(), nil
}

// asCELValue turns a parser's typed value into what CEL reads: the same
// snake_case keys as its --json output.
func asCELValue(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}
