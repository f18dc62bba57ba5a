package app

import (
	"strings"

	"github.com/argoexec/argoexec/executor/protocol"
	"github.com/argoexec/argoexec/executor/protocol/argo"
	"github.com/argoexec/argoexec/executor/protocol/native"
)

// protocols are the controller protocols argoexec speaks, one line each;
// the last is spoken when the environment names none. This is the only
// place that lists them.
func protocols() []protocol.Protocol {
	return []protocol.Protocol{
		&argo.Protocol{},
		&native.Protocol{},
	}
}

// detectProtocol picks, of all, the protocol whose own variables the
// environment sets (the last of all when none is), and completes it from
// the environment: a mix of two is an error naming the variables, never a
// guess.
func detectProtocol(cmdName string, getenv func(string) string, all []protocol.Protocol) (protocol.Protocol, error) {
	var found protocol.Protocol
	var foundVars []string
	for _, p := range all {
		var set []string
		for _, n := range p.OwnEnv() {
			if getenv(n) != "" {
				set = append(set, n)
			}
		}
		if len(set) == 0 {
			continue
		}
		if found != nil {
			return nil, usageErrorf("argoexec %s: the environment mixes the %s controller protocol (%s) with the %s one (%s): the pod was built by neither controller; rebuild it with one",
				cmdName, found.Name(), strings.Join(foundVars, ", "), p.Name(), strings.Join(set, ", "))
		}
		found, foundVars = p, set
	}
	if found == nil {
		found = all[len(all)-1]
	}
	if err := found.Complete(cmdName, getenv); err != nil {
		return nil, usageErrorf("%v", err)
	}
	return found, nil
}
