#include "tessera/Context.h"
#include "tessera/Error.h"
#include "tessera/Stream.h"

namespace tessera {

// ---- Stream ---------------------------------------------------------------

Stream::Stream(const Context &ctx) : backend_(ctx.sharedBackend()) {
  handle_ = backend_->createStream();
  owned_ = true;
}

Stream::Stream(std::shared_ptr<Backend> backend, StreamHandle handle, bool owned)
    : backend_(std::move(backend)), handle_(handle), owned_(owned) {}

Stream::~Stream() { reset(); }

Stream::Stream(Stream &&o) noexcept
    : backend_(std::move(o.backend_)), handle_(o.handle_), owned_(o.owned_) {
  o.handle_ = nullptr;
  o.owned_ = false;
}

Stream &Stream::operator=(Stream &&o) noexcept {
  if (this != &o) {
    reset();
    backend_ = std::move(o.backend_);
    handle_ = o.handle_;
    owned_ = o.owned_;
    o.handle_ = nullptr;
    o.owned_ = false;
  }
  return *this;
}

void Stream::reset() noexcept {
  if (owned_ && handle_ && backend_)
    backend_->destroyStream(handle_);
  handle_ = nullptr;
  owned_ = false;
  backend_.reset();
}

Backend &Stream::backend() const {
  if (!backend_)
    throw Error("use of an empty (moved-from or default-constructed) Stream");
  return *backend_;
}

void Stream::synchronize() const { backend().synchronizeStream(handle_); }

// ---- Event ----------------------------------------------------------------

Event::Event(const Context &ctx) : Event(ctx.sharedBackend()) {}

Event::Event(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {
  if (!backend_)
    throw Error("Event: null backend");
  handle_ = backend_->createEvent();
}

Event::~Event() { reset(); }

Event::Event(Event &&o) noexcept : backend_(std::move(o.backend_)), handle_(o.handle_) {
  o.handle_ = nullptr;
}

Event &Event::operator=(Event &&o) noexcept {
  if (this != &o) {
    reset();
    backend_ = std::move(o.backend_);
    handle_ = o.handle_;
    o.handle_ = nullptr;
  }
  return *this;
}

void Event::reset() noexcept {
  if (handle_ && backend_)
    backend_->destroyEvent(handle_);
  handle_ = nullptr;
  backend_.reset();
}

void Event::record(const Stream &stream) {
  if (!handle_)
    throw Error("use of an empty (moved-from or default-constructed) Event");
  if (&stream.backend() != backend_.get())
    throw Error("Event::record: the stream belongs to a different context");
  backend_->recordEvent(handle_, stream.handle());
}

void Event::synchronize() const {
  if (!handle_)
    throw Error("use of an empty (moved-from or default-constructed) Event");
  backend_->synchronizeEvent(handle_);
}

float Event::elapsedMs(const Event &start, const Event &end) {
  if (!start.handle_ || !end.handle_)
    throw Error("Event::elapsedMs: empty event");
  if (start.backend_ != end.backend_)
    throw Error("Event::elapsedMs: the events belong to different contexts");
  return start.backend_->elapsedMilliseconds(start.handle_, end.handle_);
}

} // namespace tessera
