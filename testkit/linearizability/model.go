package main

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The model: one user group, as the fleet keeps it, seen through ensure,
// remove and list.
//
//   - ensure: the group exists afterwards and the call returns its token; a
//     group that exists keeps its token (ensure is idempotent: it never hands out
//     another token for a group that is there), an absent one is created with a
//     new token;
//   - remove: the group is absent afterwards (whether it was there or not);
//   - list: shows the group with its token when it exists, and not when it does
//     not.
//
// The state is "" (absent), "?" (present, its token not seen yet: made by an
// indeterminate ensure, whose answer never came) or the token's tag. An
// indeterminate call (unknown output) is one that may take effect anywhere from
// its call on; porcupine may also place it after everything else, which is the
// same as never taking effect, so the model need not say "maybe".

type groupInput struct {
	F string // "ensure", "remove", "list"
}

type groupOutput struct {
	Known   bool   // false: the call is indeterminate (no answer, or an ambiguous failure)
	Present bool   // list: the group was listed
	Token   string // ensure: the token handed out; list: the listed token ("" when the answer had none)
}

const (
	absent       = ""
	unknownToken = "?"
)

func step(state interface{}, in interface{}, out interface{}) (bool, interface{}) {
	s := state.(string)
	input := in.(groupInput)
	output := out.(groupOutput)
	switch input.F {
	case "ensure":
		if !output.Known || output.Token == "" {
			if s == absent {
				return true, unknownToken
			}
			return true, s
		}
		if s == absent || s == unknownToken || s == output.Token {
			return true, output.Token
		}
		return false, s
	case "remove":
		return true, absent
	case "list":
		if !output.Known {
			return true, s
		}
		if !output.Present {
			return s == absent, s
		}
		if s == absent {
			return false, s
		}
		if output.Token == "" || s == output.Token {
			return true, s
		}
		if s == unknownToken {
			return true, output.Token
		}
		return false, s
	}
	return false, s
}

func describeState(state interface{}) string {
	switch s := state.(string); s {
	case absent:
		return "absent"
	case unknownToken:
		return "present, token not seen"
	default:
		return "present, token " + s
	}
}

func describeOutput(in groupInput, out groupOutput) string {
	if !out.Known {
		return "-> (no answer)"
	}
	switch in.F {
	case "ensure":
		return "-> token " + out.Token
	case "remove":
		return "-> ok"
	case "list":
		if out.Present {
			return "-> listed, token " + out.Token
		}
		return "-> not listed"
	}
	return ""
}

// whyNot says in words why the model refuses this step from this state.
func whyNot(state string, in groupInput, out groupOutput) string {
	switch in.F {
	case "ensure":
		return fmt.Sprintf("the group is there with token %s, and an ensure must hand out the token it has", state)
	case "list":
		if !out.Present {
			return "the group is there, yet the list did not show it"
		}
		if state == absent {
			return "the group is absent, yet the list showed it"
		}
		return fmt.Sprintf("the list showed token %s, the group has %s", out.Token, state)
	}
	return "refused"
}

var groupModel = porcupine.Model{
	Init:  func() interface{} { return absent },
	Step:  step,
	Equal: func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(in interface{}, out interface{}) string {
		return in.(groupInput).F + " " + describeOutput(in.(groupInput), out.(groupOutput))
	},
	DescribeState: describeState,
}
