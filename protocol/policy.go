package protocol

import (
	"context"
	"errors"
	"fmt"
)

// Interceptor runs before a tool, after the call is verified, its input
// validated and the risk floor applied, for rules that hold across tools:
// authorization on the verified visitor, audit logs, per-visitor rate
// limits, feature flags. It sees the request's context, the call and the
// tool, a tool of [Config.Tools]: a call of any other tool is answered
// 404 unknown_tool before the interceptors, in both modes.
//
// Return nil to go on, a [*Refusal] to answer a refusal result without
// running the tool, or any other error to answer execution_failed as a
// tool's error is (an [AgentError]'s Message, else the tool's name and a
// reference to the log; [Config.ErrorMessage] when set), whatever [Code]
// the error carries: [CodeUnknownTool] included, since the tool is known. Whatever it answers is
// kept for replays like the tool's own answer, so a repeated toolCallId is
// not counted or audited twice. Global interceptors ([Config.Interceptors])
// run first, in order, then the tool's own ([WithInterceptors]).
type Interceptor func(ctx context.Context, call *Call, tool *Tool) error

// intercept runs the interceptors of a call, global ones first; ok is
// false when one of them answered, with that answer.
func (h *Handler) intercept(ctx context.Context, st *callState) (resp Response, ok bool) {
	for _, chain := range [2][]Interceptor{h.cfg.Interceptors, st.tool.interceptors} {
		for _, ic := range chain {
			// The error's As method is user code too: it runs under the
			// interceptor's protection (its Error method under
			// encodeAnswer's).
			_, err := protect(h, ctx, "an interceptor", st.call, func() (struct{}, error) {
				err := ic(ctx, st.call, st.tool)
				if err != nil {
					var refusal *Refusal
					if !errors.As(err, &refusal) {
						err = opaqueError{err}
					}
				}
				return struct{}{}, err
			})
			if err != nil {
				return h.encodeAnswer(ctx, st, nil, err), false
			}
		}
	}
	return Response{}, true
}

// riskFloor applies PROTOCOL.md §9: a call whose risk ranks below the tool's
// declared risk, or a reviewed or high tool called without approvedBy, is
// not run and gets the approval_required refusal, with a warning in the log.
// With Config.RiskFloorWarnOnly only the warning remains. ok is false when
// the call is refused.
func (h *Handler) riskFloor(ctx context.Context, st *callState) (resp Response, ok bool) {
	declared, got := st.tool.risk, st.call.Risk
	var detail string
	switch {
	case got.rank() < declared.rank():
		detail = fmt.Sprintf("This action needs %s-risk approval before it can run, but the request came as %s risk; it was not carried out.", declared, got)
	case declared.rank() >= RiskReviewed.rank() && st.call.ApprovedBy == "":
		detail = "This action needs a teammate's approval before it can run, and no approval came with the request; it was not carried out."
	default:
		return Response{}, true
	}
	warnOnly := h.cfg.RiskFloorWarnOnly
	h.cfg.Logger.WarnContext(ctx, "median: risk floor: the call's risk is below what the tool declares, or no approval came with it (Median's tool list may be behind the code: sync it)",
		"tool", st.call.Tool, "declared", declared, "received", got, "approved", st.call.ApprovedBy != "", "enforced", !warnOnly)
	if warnOnly {
		return Response{}, true
	}
	return h.encodeResult(ctx, st.call.Tool, Refuse("approval_required", detail), 0), false
}
