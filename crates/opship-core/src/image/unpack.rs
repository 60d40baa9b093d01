//! Safe unpacking of image layers (to be written).
