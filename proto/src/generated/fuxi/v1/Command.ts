// Original file: proto/fuxi/v1/common.proto


/**
 * What a worker process runs.
 */
export interface Command {
  /**
   * argv[0] is looked up in PATH. ${instance}, ${task}, ${job}, ${attempt},
   * ${instances} are substituted in every argument and env value.
   */
  'argv'?: (string)[];
  'env'?: ({[key: string]: string});
  'cwd'?: (string);
}

/**
 * What a worker process runs.
 */
export interface Command__Output {
  /**
   * argv[0] is looked up in PATH. ${instance}, ${task}, ${job}, ${attempt},
   * ${instances} are substituted in every argument and env value.
   */
  'argv': (string)[];
  'env': ({[key: string]: string});
  'cwd': (string);
}
