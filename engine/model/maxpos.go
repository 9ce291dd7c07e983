package model

// MaxPositions is the most tokens a sequence of the decoder can hold: the
// model's max_position_embeddings.
func (d *Decoder) MaxPositions() int { return d.m.Config.MaxPositions }
