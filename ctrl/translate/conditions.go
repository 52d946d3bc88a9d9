package translate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conds builds one object's conditions. A condition whose status and
// reason match the object's current one keeps its lastTransitionTime, so a
// resync that changes nothing writes nothing.
type conds struct {
	prev       []metav1.Condition
	generation int64
	now        metav1.Time
	list       []metav1.Condition
	// fresh is set when a condition took now as its transition time.
	fresh bool
}

func newConds(prev []metav1.Condition, generation int64, now metav1.Time) conds {
	return conds{prev: prev, generation: generation, now: now, list: make([]metav1.Condition, 0, 4)}
}

// set adds or replaces the condition of type typ.
func (c *conds) set(typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	c.setStatus(typ, status, reason, msg)
}

func (c *conds) setStatus(typ string, status metav1.ConditionStatus, reason, msg string) {
	nc := metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: c.generation,
		LastTransitionTime: c.now,
	}
	carried := false
	for i := range c.prev {
		if p := &c.prev[i]; p.Type == typ && p.Status == status {
			nc.LastTransitionTime = p.LastTransitionTime
			carried = true
			break
		}
	}
	if !carried {
		c.fresh = true
	}
	for i := range c.list {
		if c.list[i].Type == typ {
			c.list[i] = nc
			return
		}
	}
	c.list = append(c.list, nc)
}

// get returns the condition of type typ, if set.
func (c *conds) get(typ string) *metav1.Condition {
	for i := range c.list {
		if c.list[i].Type == typ {
			return &c.list[i]
		}
	}
	return nil
}

// isTrue reports whether the condition of type typ is set and True.
func (c *conds) isTrue(typ string) bool {
	cd := c.get(typ)
	return cd != nil && cd.Status == metav1.ConditionTrue
}

// findCond returns the condition of type typ in a list, if present.
func findCond(list []metav1.Condition, typ string) *metav1.Condition {
	for i := range list {
		if list[i].Type == typ {
			return &list[i]
		}
	}
	return nil
}
