package controller

import "github.com/kraftd/kraftd/metadata"

// TopicName is the committed name of the topic with id, for the
// authorizer, which checks topics by name (DeleteTopics by id).
func (c *Controller) TopicName(id metadata.Uuid) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if t, ok := c.image.Topics[id]; ok {
		return t.Name, true
	}
	return "", false
}
