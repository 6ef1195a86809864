// Original file: proto/fuxi/v1/common.proto


/**
 * A quantity of resources. All arithmetic lives in @fuxi/common/resource.
 */
export interface Resource {
  'cpuMilli'?: (number);
  'memoryMb'?: (number);
}

/**
 * A quantity of resources. All arithmetic lives in @fuxi/common/resource.
 */
export interface Resource__Output {
  'cpuMilli': (number);
  'memoryMb': (number);
}
