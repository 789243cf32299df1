// porcupine-check: checks a Jepsen-style history of the fleet's calls for
// linearizability per group id with porcupine (github.com/anishathalye/porcupine
// v1.3.1), against a model of one group (model.go). Built and cached by
// scripts/ensure-linearizability; called by testkit/jepsen/linearizability.ts
// for every history the project's own checker checks (testkit/jepsen/checker.ts).
//
// Input (stdin, JSON, at most 64 MiB):
//
//	{ "timeoutMs": 60000, "ids": ["g1", ...],
//	  "operations": [ { "index": 3, "client": "r1", "f": "ensure"|"remove"|"list",
//	    "id": "g1", "call": 120, "return": 450 | null,
//	    "outcome": "ok"|"fail"|"info",
//	    "token": "#ab12cd34",                      (ensure ok: the token handed out)
//	    "groups": [ { "id": "g1", "token": "#..." } ] } ] }   (list ok)
//
// Times are integers (ms) on one clock. As Jepsen does: "ok" is a call that took
// effect once, between its call and its return; "fail" one that certainly took
// no effect (dropped); "info" (or a missing return) an indeterminate call: it may
// have taken effect at any time after its call, or never, so its return is the
// end of the history and its result unknown. Tokens are opaque tags (the caller
// passes hashes, never a secret).
//
// "ids" names the groups to check (default: every id an operation names); a list
// is a read of each of them (listed with its token, or absent).
//
// Exit status: 0 every id linearizable; 1 some id is not (each described on
// stdout: its operations, the longest linearizable prefix porcupine found and
// why no operation can come next); 2 bad input; 3 porcupine gave up (timeout)
// on some id and none was found not linearizable.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

const maxInput = 64 << 20

type listedGroup struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

type inputOp struct {
	Index   int           `json:"index"`
	Client  string        `json:"client"`
	F       string        `json:"f"`
	ID      string        `json:"id"`
	Call    int64         `json:"call"`
	Return  *int64        `json:"return"`
	Outcome string        `json:"outcome"`
	Token   string        `json:"token"`
	Groups  []listedGroup `json:"groups"`
}

type input struct {
	TimeoutMs  int64     `json:"timeoutMs"`
	IDs        []string  `json:"ids"`
	Operations []inputOp `json:"operations"`
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}

func run(stdin io.Reader, stdout, stderr io.Writer) int {
	data, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err != nil {
		fmt.Fprintf(stderr, "porcupine-check: reading the history: %v\n", err)
		return 2
	}
	if len(data) > maxInput {
		fmt.Fprintf(stderr, "porcupine-check: the history is larger than %d bytes\n", maxInput)
		return 2
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		fmt.Fprintf(stderr, "porcupine-check: the history is not valid JSON: %v\n", err)
		return 2
	}
	histories, err := partition(in)
	if err != nil {
		fmt.Fprintf(stderr, "porcupine-check: %v\n", err)
		return 2
	}
	timeout := time.Duration(in.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	illegal, unknown := 0, 0
	for _, h := range histories {
		result, info := porcupine.CheckOperationsVerbose(groupModel, h.ops, timeout)
		switch result {
		case porcupine.Ok:
			fmt.Fprintf(stdout, "%s: linearizable (%d operations)\n", h.id, len(h.ops))
		case porcupine.Unknown:
			unknown++
			fmt.Fprintf(stdout, "%s: undecided: porcupine gave up after %s (%d operations)\n", h.id, timeout, len(h.ops))
		default:
			illegal++
			fmt.Fprint(stdout, explain(h, info))
		}
	}
	switch {
	case illegal > 0:
		return 1
	case unknown > 0:
		return 3
	}
	return 0
}

// groupHistory is one id's operations, as porcupine checks them.
type groupHistory struct {
	id  string
	ops []porcupine.Operation
	end int64
}

// meta is what a description of an operation needs besides its input and output.
type meta struct {
	index         int
	client        string
	indeterminate bool
	call, ret     int64
}

func partition(in input) ([]groupHistory, error) {
	if len(in.Operations) > 1_000_000 {
		return nil, fmt.Errorf("more than 1000000 operations")
	}
	var end int64
	for _, op := range in.Operations {
		if op.Call < 0 {
			return nil, fmt.Errorf("operation #%d: its call (%d) is before the history began", op.Index, op.Call)
		}
		if op.Return != nil && *op.Return < op.Call {
			return nil, fmt.Errorf("operation #%d: its return (%d) is before its call (%d)", op.Index, *op.Return, op.Call)
		}
		if op.Call > end {
			end = op.Call
		}
		if op.Return != nil && *op.Return > end {
			end = *op.Return
		}
		switch op.F {
		case "ensure", "remove":
			if op.ID == "" {
				return nil, fmt.Errorf("operation #%d: %s without an id", op.Index, op.F)
			}
		case "list":
		default:
			return nil, fmt.Errorf("operation #%d: unknown f %q (ensure, remove or list)", op.Index, op.F)
		}
		switch op.Outcome {
		case "ok", "fail", "info", "":
		default:
			return nil, fmt.Errorf("operation #%d: unknown outcome %q (ok, fail or info)", op.Index, op.Outcome)
		}
	}
	// Jepsen's infinity: an indeterminate call's return is after everything the history saw.
	end++

	ids := in.IDs
	if len(ids) == 0 {
		seen := map[string]bool{}
		for _, op := range in.Operations {
			if op.ID != "" && !seen[op.ID] {
				seen[op.ID] = true
				ids = append(ids, op.ID)
			}
		}
		sort.Strings(ids)
	}
	clients := map[string]int{}
	clientOf := func(name string) int {
		if n, ok := clients[name]; ok {
			return n
		}
		clients[name] = len(clients)
		return clients[name]
	}
	var out []groupHistory
	for _, id := range ids {
		h := groupHistory{id: id, end: end}
		for _, op := range in.Operations {
			if op.F != "list" && op.ID != id {
				continue
			}
			determinate := op.Outcome == "ok" && op.Return != nil
			if op.Outcome == "fail" && op.Return != nil {
				continue // certainly took no effect
			}
			if op.F == "list" && !determinate {
				continue // a read that returned nothing tells nothing
			}
			ret := end
			if determinate {
				ret = *op.Return
			}
			var output groupOutput
			if determinate {
				output.Known = true
				switch op.F {
				case "ensure":
					output.Token = op.Token
				case "list":
					for _, g := range op.Groups {
						if g.ID == id {
							output.Present = true
							output.Token = g.Token
						}
					}
				}
			}
			h.ops = append(h.ops, porcupine.Operation{
				ClientId: clientOf(op.Client),
				Input:    groupInput{F: op.F},
				Call:     op.Call,
				Output:   output,
				Return:   ret,
				Metadata: meta{index: op.Index, client: op.Client, indeterminate: !determinate, call: op.Call, ret: ret},
			})
		}
		out = append(out, h)
	}
	return out, nil
}

func seconds(ms int64) string { return fmt.Sprintf("%.3fs", float64(ms)/1000) }

func describe(op porcupine.Operation, _ int64) string {
	m := op.Metadata.(meta)
	in := op.Input.(groupInput)
	out := op.Output.(groupOutput)
	ret := seconds(m.ret)
	if m.indeterminate {
		ret = "? (indeterminate)"
	}
	return fmt.Sprintf("#%d %s %s %s..%s %s", m.index, m.client, in.F, seconds(m.call), ret, describeOutput(in, out))
}

// explain tells why an id's history is not linearizable: the longest prefix
// porcupine could linearize, the state it leaves, and why none of the
// operations that could come next fits.
func explain(h groupHistory, info porcupine.LinearizationInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: NOT LINEARIZABLE (%d operations; porcupine v1.3.1, model: one user group under ensure/remove/list)\n", h.id, len(h.ops))
	sorted := append([]porcupine.Operation(nil), h.ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	b.WriteString("  its operations, by call time:\n")
	for _, op := range sorted {
		fmt.Fprintf(&b, "    %s\n", describe(op, h.end))
	}
	var longest []porcupine.Operation
	for _, partitionPrefixes := range info.PartialLinearizationsOperations() {
		for _, prefix := range partitionPrefixes {
			if len(prefix) > len(longest) {
				longest = prefix
			}
		}
	}
	state := groupModel.Init()
	b.WriteString("  the longest order porcupine found that explains a prefix:\n")
	if len(longest) == 0 {
		b.WriteString("    (none: no operation can come first)\n")
	}
	done := map[int]bool{}
	for _, op := range longest {
		_, state = groupModel.Step(state, op.Input, op.Output)
		done[op.Metadata.(meta).index] = true
		fmt.Fprintf(&b, "    %s  => %s\n", describe(op, h.end), describeState(state))
	}
	// The operations that could be linearized next: not yet placed, called before every other unplaced one returned.
	var rest []porcupine.Operation
	minReturn := int64(1<<63 - 1)
	for _, op := range sorted {
		if !done[op.Metadata.(meta).index] {
			rest = append(rest, op)
			if op.Return < minReturn {
				minReturn = op.Return
			}
		}
	}
	fmt.Fprintf(&b, "  from there (%s) none of the operations that could come next fits:\n", describeState(state))
	for _, op := range rest {
		if op.Call <= minReturn {
			ok, _ := groupModel.Step(state, op.Input, op.Output)
			why := "it fits here, but what must follow it does not"
			if !ok {
				why = whyNot(state.(string), op.Input.(groupInput), op.Output.(groupOutput))
			}
			fmt.Fprintf(&b, "    %s: %s\n", describe(op, h.end), why)
		}
	}
	return b.String()
}
