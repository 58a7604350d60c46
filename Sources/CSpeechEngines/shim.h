/* Types of the speech engines segno opens at run time (dlopen): nothing is linked. The layouts
 * follow sherpa-onnx 2.0.1's C API (sherpa-onnx/c-api/c-api.h, shipped in the PyPI wheel
 * sherpa-onnx-core), declared here because segno builds without the wheel installed. */
#ifndef SEGNO_SPEECH_ENGINES_H
#define SEGNO_SPEECH_ENGINES_H
#include <stdint.h>

typedef struct SegnoSileroVadConfig {
  const char *model;
  float threshold;
  float min_silence_duration;
  float min_speech_duration;
  int32_t window_size;
  float max_speech_duration;
} SegnoSileroVadConfig;

typedef struct SegnoTenVadConfig {
  const char *model;
  float threshold;
  float min_silence_duration;
  float min_speech_duration;
  int32_t window_size;
  float max_speech_duration;
} SegnoTenVadConfig;

typedef struct SegnoVadModelConfig {
  SegnoSileroVadConfig silero_vad;
  int32_t sample_rate;
  int32_t num_threads;
  const char *provider;
  int32_t debug;
  SegnoTenVadConfig ten_vad;
} SegnoVadModelConfig;

typedef struct SegnoSpeechSegment {
  int64_t start;
  float *samples;
  int32_t n;
} SegnoSpeechSegment;

#endif
