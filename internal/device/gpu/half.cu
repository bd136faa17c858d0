// Conversions between float32 and the 16-bit storage formats, bit for bit
// those of package half: round to nearest even, NaN kept quiet, fp16
// subnormals kept and overflow to ±Inf. A 16-bit buffer holds its values
// packed two to a 4-byte word, as the engine allocates it.

// bf16_from returns the bf16 nearest f.
GPUZ_DEVICE unsigned short bf16_from(float f) {
	unsigned b = GPUZ_BITS(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) {
		return (unsigned short)((b >> 16) | 0x0040u);
	}
	b += 0x7fffu + ((b >> 16) & 1u);
	return (unsigned short)(b >> 16);
}

// fp16_from returns the IEEE binary16 nearest f.
GPUZ_DEVICE unsigned short fp16_from(float f) {
	unsigned b = GPUZ_BITS(f);
	unsigned sign = (b >> 16) & 0x8000u;
	unsigned abs = b & 0x7fffffffu;
	if (abs > 0x7f800000u) {
		return (unsigned short)(sign | 0x7e00u | ((abs >> 13) & 0x01ffu));
	}
	if (abs >= 0x477ff000u) {
		return (unsigned short)(sign | 0x7c00u);
	}
	if (abs >= 0x38800000u) {
		unsigned r = abs - (112u << 23);
		r += 0x0fffu + ((r >> 13) & 1u);
		return (unsigned short)(sign | (r >> 13));
	}
	if (abs > 0x33000000u) {
		unsigned e = abs >> 23;
		unsigned m = (abs & 0x007fffffu) | 0x00800000u;
		unsigned shift = 126u - e;
		unsigned k = m >> shift;
		unsigned rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
		if (rem > halfway || (rem == halfway && (k & 1u))) {
			k++;
		}
		return (unsigned short)(sign | k);
	}
	return (unsigned short)sign;
}

// fp16_to returns the float32 value of the fp16 h.
GPUZ_DEVICE float fp16_to(unsigned short h) {
	unsigned sign = ((unsigned)h & 0x8000u) << 16;
	unsigned exp = ((unsigned)h >> 10) & 0x1fu;
	unsigned man = (unsigned)h & 0x03ffu;
	if (exp == 0x1fu) {
		return GPUZ_FLOAT(sign | (man ? 0x7fc00000u | (man << 13) : 0x7f800000u));
	}
	if (exp != 0) {
		return GPUZ_FLOAT(sign | ((((exp << 10) | man) << 13) + (112u << 23)));
	}
	// Subnormal or zero: man·2^-24, exact in float32.
	float v = (float)man * 5.9604644775390625e-8f;
	return GPUZ_FLOAT(sign | GPUZ_BITS(v));
}

// to_bf16 sets the n bf16 values of h to those nearest f's.
GPUZ_KERNEL to_bf16(unsigned short *h, const float *f, long long n) {
	GPUZ_FOR(i, n) { h[i] = bf16_from(f[i]); }
}

// from_bf16 sets the n floats of f to the bf16 values of h.
GPUZ_KERNEL from_bf16(float *f, const unsigned short *h, long long n) {
	GPUZ_FOR(i, n) { f[i] = GPUZ_FLOAT((unsigned)h[i] << 16); }
}

// to_fp16 sets the n fp16 values of h to those nearest f's.
GPUZ_KERNEL to_fp16(unsigned short *h, const float *f, long long n) {
	GPUZ_FOR(i, n) { h[i] = fp16_from(f[i]); }
}

// from_fp16 sets the n floats of f to the fp16 values of h.
GPUZ_KERNEL from_fp16(float *f, const unsigned short *h, long long n) {
	GPUZ_FOR(i, n) { f[i] = fp16_to(h[i]); }
}
