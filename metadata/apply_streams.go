package metadata

// Streams and topics.

func (s *State) applyCreateStream(ctx ApplyContext, c CreateStream) Result {
	if !s.authorize(ctx.UserID, PermCreateStream, 0, 0) {
		return fail(CodeUnauthorized)
	}
	if !validName(c.Name) {
		return fail(CodeInvalidStreamName)
	}
	if _, dup := s.streamByName[c.Name]; dup {
		return fail(CodeStreamNameExists)
	}
	id, ok := lowestFree(s.streams, StreamsMax, &s.streamIDHint)
	if !ok {
		return fail(CodeTooManyStreams)
	}
	st := &streamState{
		id: id, name: c.Name, createdAt: ctx.Timestamp,
		topics: make(map[uint32]*topicState), topicByName: make(map[string]uint32),
	}
	s.streams[id] = st
	s.streamByName[c.Name] = id
	v := st.view()
	return Result{Stream: &v}
}

func (s *State) applyUpdateStream(ctx ApplyContext, c UpdateStream) Result {
	st, code := s.resolveStream(c.Stream)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageStream, st.id, 0) {
		return fail(CodeUnauthorized)
	}
	if !validName(c.Name) {
		return fail(CodeInvalidStreamName)
	}
	if other, dup := s.streamByName[c.Name]; dup && other != st.id {
		return fail(CodeStreamNameExists)
	}
	delete(s.streamByName, st.name)
	st.name = c.Name
	s.streamByName[c.Name] = st.id
	return Result{}
}

func (s *State) applyDeleteStream(ctx ApplyContext, c DeleteStream) Result {
	st, code := s.resolveStream(c.Stream)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageStream, st.id, 0) {
		return fail(CodeUnauthorized)
	}
	delete(s.streams, st.id)
	delete(s.streamByName, st.name)
	lowerHint(&s.streamIDHint, st.id)
	return Result{}
}

func (s *State) applyPurgeStream(ctx ApplyContext, c PurgeStream) Result {
	st, code := s.resolveStream(c.Stream)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageStream, st.id, 0) {
		return fail(CodeUnauthorized)
	}
	for _, t := range st.topics {
		t.purge()
	}
	return Result{}
}

// purge bumps every partition's purge generation; each replica's
// reconciler drops the partition's data when it sees the new generation.
func (t *topicState) purge() {
	for i := range t.partitions {
		t.partitions[i].PurgeGeneration++
	}
}

func validCompression(c Compression) bool { return c == CompressionNone || c == CompressionGzip }

func validDurability(d Durability) bool { return d == DurabilityReplicated || d == DurabilityPersisted }

// validateTopicOptions enforces wire-protocol.md §4.2.1 on resolved values.
func validateTopicOptions(c CreateTopic) bool {
	o := c.Options
	switch {
	case !validCompression(c.Compression):
		return false
	case o.SegmentSize < SegmentSizeMin || o.SegmentSize > SegmentSizeMax || o.SegmentSize%SegmentSizeAlign != 0:
		return false
	case c.MaxTopicSize != Never && c.MaxTopicSize < o.SegmentSize:
		return false
	case o.MessagesRequiredToSave < 1 || o.MessagesRequiredToSave > MessagesRequiredToSaveMax:
		return false
	case o.SizeOfMessagesRequiredToSave > SizeOfMessagesToSaveMax:
		return false
	case o.PreallocateSegments && o.SegmentSize*uint64(c.PartitionsCount) > PreallocatedBytesPerTopicMax:
		return false
	case !validDurability(o.Durability) || !validDurability(o.ConsumerOffsetDurability):
		return false
	case c.ExplicitOptions&^optKeysAll != 0:
		return false
	}
	return true
}

func (s *State) applyCreateTopic(ctx ApplyContext, c CreateTopic) Result {
	st, code := s.resolveStream(c.Stream)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermCreateTopic, st.id, 0) {
		return fail(CodeUnauthorized)
	}
	if !validName(c.Name) {
		return fail(CodeInvalidTopicName)
	}
	if _, dup := st.topicByName[c.Name]; dup {
		return fail(CodeTopicNameExists)
	}
	if c.PartitionsCount > PartitionsPerOpMax {
		return fail(CodeInvalidPartitions)
	}
	if !validateTopicOptions(c) {
		return fail(CodeInvalidOptionValue)
	}
	id, ok := lowestFree(st.topics, TopicsPerStreamMax, &st.topicIDHint)
	if !ok {
		return fail(CodeTooManyTopics)
	}
	t := &topicState{
		id: id, name: c.Name, createdAt: ctx.Timestamp,
		messageExpiry: c.MessageExpiry, compression: c.Compression, maxTopicSize: c.MaxTopicSize,
		options: c.Options, explicitOptions: c.ExplicitOptions,
		groups: make(map[uint32]*groupState), groupByName: make(map[string]uint32),
	}
	t.addPartitions(c.PartitionsCount, ctx, s.revision+1)
	st.topics[id] = t
	st.topicByName[c.Name] = id
	v := t.view(st.id)
	return Result{Topic: &v}
}

// updatableTopicKeys are the option keys UpdateTopic may set.
const updatableTopicKeys = OptCompression | OptMessageExpiry | OptMaxTopicSize

// applyUpdateTopic patches the topic: a setting changes only when its bit
// is in ExplicitOptions (the keys the client sent), so a rename alone, or
// a client that predates a key, never erases a setting. Bits of
// create-only keys are ignored.
func (s *State) applyUpdateTopic(ctx ApplyContext, c UpdateTopic) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	if !validName(c.Name) {
		return fail(CodeInvalidTopicName)
	}
	if other, dup := st.topicByName[c.Name]; dup && other != t.id {
		return fail(CodeTopicNameExists)
	}
	sent := c.ExplicitOptions & updatableTopicKeys
	expiry, compression, maxSize := t.messageExpiry, t.compression, t.maxTopicSize
	if sent&OptMessageExpiry != 0 {
		expiry = c.MessageExpiry
	}
	if sent&OptCompression != 0 {
		compression = c.Compression
	}
	if sent&OptMaxTopicSize != 0 {
		maxSize = c.MaxTopicSize
	}
	if !validCompression(compression) || (maxSize != Never && maxSize < t.options.SegmentSize) {
		return fail(CodeInvalidOptionValue)
	}
	delete(st.topicByName, t.name)
	t.name = c.Name
	st.topicByName[c.Name] = t.id
	t.messageExpiry, t.compression, t.maxTopicSize = expiry, compression, maxSize
	t.explicitOptions |= sent
	return Result{}
}

func (s *State) applyDeleteTopic(ctx ApplyContext, c DeleteTopic) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	delete(st.topics, t.id)
	delete(st.topicByName, t.name)
	lowerHint(&st.topicIDHint, t.id)
	return Result{}
}

func (s *State) applyPurgeTopic(ctx ApplyContext, c PurgeTopic) Result {
	st, t, code := s.resolveTopic(c.Stream, c.Topic)
	if code != CodeOK {
		return fail(code)
	}
	if !s.authorize(ctx.UserID, PermManageTopic, st.id, t.id) {
		return fail(CodeUnauthorized)
	}
	t.purge()
	return Result{}
}
