package protocol

import (
	"context"
	"fmt"
)

// Interceptor runs before a tool, after the call is verified, its input
// validated and the risk floor applied, for rules that hold across tools:
// authorization on the verified visitor, audit logs, per-visitor rate
// limits, feature flags. It sees the request's context, the call and the
// tool (nil when middleware lets through a tool the Handler does not know).
//
// Return nil to go on, a [*Refusal] to answer a refusal result without
// running the tool, or any other error to answer execution_failed with its
// message (through [Config.ErrorMessage] when set). Whatever it answers is
// kept for replays like the tool's own answer, so a repeated toolCallId is
// not counted or audited twice. Global interceptors ([Config.Interceptors])
// run first, in order, then the tool's own ([WithInterceptors]).
type Interceptor func(ctx context.Context, call *Call, tool *Tool) error

// intercept runs the interceptors of a call; stop is true when one of them
// answered.
func (h *Handler) intercept(ctx context.Context, ex *exchange) (resp Response, stop bool) {
	chains := [2][]Interceptor{h.interceptors, nil}
	if ex.tool != nil {
		chains[1] = ex.tool.interceptors
	}
	for _, chain := range chains {
		for _, ic := range chain {
			_, err := protect(h, ctx, "an interceptor", ex.call, func() (struct{}, error) {
				return struct{}{}, ic(ctx, ex.call, ex.tool)
			})
			if err != nil {
				return h.encodeAnswer(ctx, ex, nil, err), true
			}
		}
	}
	return Response{}, false
}

// riskFloor applies PROTOCOL.md §9: a call whose risk ranks below the tool's
// declared risk, or a reviewed or high tool called without approvedBy, is
// not run and gets the approval_required refusal, with a warning in the log.
// With Config.RiskFloorWarnOnly only the warning remains.
func (h *Handler) riskFloor(ctx context.Context, ex *exchange) (Response, bool) {
	declared, got := ex.tool.risk, ex.call.Risk
	var detail string
	switch {
	case got.rank() < declared.rank():
		detail = fmt.Sprintf("This action needs %s-risk approval before it can run, but the request came as %s risk; it was not carried out.", declared, got)
	case declared.rank() >= RiskReviewed.rank() && ex.call.ApprovedBy == "":
		detail = "This action needs a teammate's approval before it can run, and no approval came with the request; it was not carried out."
	default:
		return Response{}, false
	}
	h.log.WarnContext(ctx, "median: risk floor: the call's risk is below what the tool declares, or no approval came with it (Median's tool list may be behind the code: sync it)",
		"tool", ex.call.Tool, "declared", declared, "received", got, "approved", ex.call.ApprovedBy != "", "enforced", !h.riskWarnOnly)
	if h.riskWarnOnly {
		return Response{}, false
	}
	return h.encodeResult(ctx, ex.call.Tool, Refuse("approval_required", detail), 0), true
}
